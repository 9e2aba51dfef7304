"""Every HTML report, loaded in a real browser (headless Chromium from Debian).

The reports of `iolab run -o`, `iolab compare -o`, `iolab bench` and
`iolab paper wpcas` are served over HTTP on 127.0.0.1 and opened at a phone
width and a desktop width. Each load fails the test on a console error, a
page error, a failed request, a missing or broken image, or a link that does
not resolve; then the layout is checked (the page never scrolls sideways,
every image and table box fits the window, the text is not clipped) and a
full-page screenshot is taken, which must be as wide as the window (a page
wider than the screen makes a wider screenshot) and not blank. The
screenshots are kept in the test's directory, or in $IOLAB_SCREENSHOTS.

Reference images are not compared pixel by pixel: fonts and Chromium's
rasterizer differ between machines more than a report's layout does, so
the facts above are what the test pins.

Needs Chromium (`make deps` installs Debian's `chromium`), Python's
`playwright` (dev extra; driven with executable_path, no browser download)
and root for the bench run (CI runs as root).
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parents[1].parent
VIEWPORTS = {"phone": (390, 844), "desktop": (1280, 800)}
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def iolab(*args: str, cwd: Path, env: dict | None = None) -> None:
    proc = subprocess.run([sys.executable, "-m", "iolab", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=1800, env={**os.environ, **(env or {})})
    assert proc.returncode == 0, f"iolab {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"


def synthetic_iozone_bench(out: Path) -> None:
    """A bench report with the widest tables there are: iozone's matrix over
    four record lengths and four configurations, from runs made up here."""
    from iolab.bench import analysis, report, session, workloads
    from iolab.bench.configs import Config

    w = workloads.get("iozone")
    variants = w.variants({"reclen": "32k,1m,4m,16m"})
    configs = [Config("none"), Config("mq-deadline"), Config("kyber"), Config("bfq", (("slice_idle", "0"),))]
    rng = np.random.default_rng(5)
    runs = []
    for rep, units in enumerate(session.plan(configs, variants, 3, seed=5)):
        for slot, (config, variant) in enumerate(units):
            metrics = {k: float(rng.normal(100e6, 3e6)) for k in w.measures}
            runs.append(session.Run(len(runs), rep, slot, config.label, variant.label, "2026-01-01T00:00:00", 1.0,
                                    {"scheduler": config.scheduler, "nr_requests": "256", "iosched.slice_idle": "0"},
                                    {"kernel": "6.1", "model": "synthetic", "size_bytes": str(2**30)}, metrics,
                                    f"fio/run-{len(runs):04d}.json"))
    meta = {"device": "/dev/loop-with-a-long-name-7", "model": "loop over /var/tmp/a/rather/long/path/to/the/"
            "backing/file/of/the/sandbox/iolab-loop-1234567.img (direct I/O on)", "rotational": "1",
            "kernel": "6.1", "kernel_version": "#1 SMP PREEMPT_DYNAMIC", "fio": "fio-3.33", "cpus": 2, "host": "ci",
            "workload": w.name, "workload_summary": w.summary, "mirrors": w.mirrors, "job_file": str(w.jobfile),
            "params": {"reclen": "32k,1m,4m,16m"}, "variants": [{"label": v.label, "params": v.params} for v in variants],
            "configs": [c.label for c in configs], "reps": 3, "runtime_s": 1.0, "ramp_s": 0.0, "seed": 5,
            "drop_caches": "sync; echo 3 > /proc/sys/vm/drop_caches before every run", "loadavg_start": "0.1",
            "loadavg_end": "0.2", "scheduler_defaults": {"bfq": {"slice_idle": "8", "low_latency": "1"}},
            "region_bytes": 2**30}
    s = session.Session(session.Options(workload=w, reps=3), meta, configs, variants, runs,
                        interrupted="Ctrl-C", signum=2, restored=["restored /dev/loop-with-a-long-name-7"])
    s.runs = s.runs[:-5]  # interrupted: the last repetition is partial
    out.mkdir(parents=True)
    report.write(s, analysis.analyse(s), out)


@pytest.fixture(scope="module")
def reports(tmp_path_factory, wpcas_quick, request) -> tuple[Path, dict[str, str]]:
    """The reports, under one directory served over HTTP; name -> path below it."""
    root = tmp_path_factory.mktemp("reports")
    spec = ROOT / "examples" / "iozone-seq.toml"
    iolab("run", str(spec), "--set", "workload.processes=2", "--set", "run.repetitions=3", "-q", "-o", "run",
          cwd=root)
    iolab("compare", "--disk", "hp97560", "--workload", "iozone", "--schedulers", "noop,deadline,as,cfq",
          "--set", "workload.processes=3", "--seeds", "3", "-q", "-o", "compare", cwd=root)
    assert os.geteuid() == 0, "the bench report needs root (CI runs as root)"
    iolab("bench", "--loop", "64M", "--reps", "2", "--runtime", "0.3", "--ramp", "0", "--no-progress",
          "--schedulers", "none,mq-deadline,bfq", "-o", "bench", cwd=root,
          env={"IOLAB_STATE_DIR": str(root / "state")})
    synthetic_iozone_bench(root / "bench-iozone")
    shutil.copytree(wpcas_quick, root / "paper")
    names = ["run", "compare", "bench", "bench-iozone", "paper"]
    try:
        # It needs Postfix's smtp-source (`make deps`); without it only this page is skipped.
        shutil.copytree(request.getfixturevalue("fastqueue_quick"), root / "paper-fastqueue")
        names.append("paper-fastqueue")
    except pytest.skip.Exception:
        pass
    pages = {name: f"{name}/report.html" for name in names}
    for page in pages.values():
        assert (root / page).is_file(), page
    return root, pages


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def server(reports):
    root, _ = reports
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    assert Path(chromium).exists(), "Chromium is missing: run `make deps` (Debian package chromium)"
    # playwright starts Chromium with a fresh profile of its own (a new --user-data-dir).
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


def screenshots_dir(tmp_path: Path) -> Path:
    d = Path(os.environ.get("IOLAB_SCREENSHOTS") or tmp_path)
    d.mkdir(parents=True, exist_ok=True)
    return d


LAYOUT = """() => {
  const w = window.innerWidth, doc = document.documentElement;
  const box = e => e.getBoundingClientRect();
  return {
    width: w, scrollWidth: doc.scrollWidth, bodyScrollWidth: document.body.scrollWidth,
    images: Array.from(document.images).map(i => ({src: i.getAttribute('src'), complete: i.complete,
      natural: i.naturalWidth, left: box(i).left, right: box(i).right})),
    tables: Array.from(document.querySelectorAll('table')).map(t => ({
      box: box(t.parentElement).right, scrolls: t.parentElement.scrollWidth > t.parentElement.clientWidth,
      overflow: getComputedStyle(t.parentElement).overflowX})),
    links: Array.from(document.querySelectorAll('a[href]')).map(a => a.getAttribute('href')),
    ids: Array.from(document.querySelectorAll('[id]')).map(e => e.id),
    text: document.body.innerText.length,
    clipped: Array.from(document.querySelectorAll('p, li, h1, h2, h3, td, th'))
      .filter(e => e.closest('.wide') === null && box(e).right > w + 1).map(e => e.tagName + ': ' +
      e.innerText.slice(0, 60)),
  };
}"""


@pytest.mark.parametrize("viewport", VIEWPORTS)
@pytest.mark.parametrize("name", ["run", "compare", "bench", "bench-iozone", "paper", "paper-fastqueue"])
def test_report_in_chromium(reports, server, browser, name, viewport, tmp_path):
    _, pages = reports
    if name not in pages:
        pytest.skip(f"no {name} report here (smtp-source missing: make deps)")
    width, height = VIEWPORTS[viewport]
    page = browser.new_page(viewport={"width": width, "height": height})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url} ({r.failure})"))
    page.on("response", lambda r: problems.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
    url = f"{server}/{pages[name]}"
    try:
        response = page.goto(url, wait_until="load")
        assert response is not None and response.status == 200
        facts = page.evaluate(LAYOUT)
        # Links: each relative one is fetched, each fragment names an element of the page.
        for href in facts["links"]:
            if href.startswith("#"):
                assert href[1:] in facts["ids"], f"{name}: link {href} names no element"
            elif "://" in href or href.startswith("//"):
                problems.append(f"link to another site (not checkable offline): {href}")
            else:
                status = page.request.get(f"{server}/{name}/{href}").status
                if status != 200:
                    problems.append(f"broken link {href}: HTTP {status}")
        assert not problems, "\n".join(problems)
        assert facts["images"], f"{name}: a report without its figures"
        for img in facts["images"]:
            assert img["complete"] and img["natural"] > 0, f"{name}: image {img['src']} did not load"
            assert img["left"] >= 0 and img["right"] <= width + 1, f"{name}: image {img['src']} wider than the window"
        assert facts["text"] > 200
        # The page itself never scrolls sideways; a wide table scrolls inside its own box.
        assert facts["scrollWidth"] <= width, (f"{name} at {viewport} width: the page is {facts['scrollWidth']} px "
                                               f"wide in a {width} px window")
        for t in facts["tables"]:
            assert t["box"] <= width + 1, f"{name}: a table's box reaches past the window"
            assert not t["scrolls"] or t["overflow"] in ("auto", "scroll"), f"{name}: a table is cut off"
        assert not facts["clipped"], f"{name}: text past the window's edge: {facts['clipped'][:3]}"
        # The screenshot: as wide as the window (a page wider than the screen makes a wider one), not blank.
        shot = screenshots_dir(tmp_path) / f"{name}-{viewport}.png"
        page.screenshot(path=str(shot), full_page=True)
        with Image.open(shot) as im:
            assert im.width == width, f"{name} at {viewport}: the screenshot is {im.width} px wide, not {width}"
            assert im.height >= height
            pixels = np.asarray(im.convert("L"))
        assert pixels.std() > 10 and (pixels < 128).mean() > 0.005, f"{name} at {viewport}: a blank page"
    finally:
        with contextlib.suppress(Exception):
            page.close()


def test_the_checks_catch_a_page_that_overflows_and_a_missing_image(server, browser, reports, tmp_path):
    """The test above can fail: a table without its scrolling box, a missing
    figure and a script error are each caught."""
    root, _ = reports
    bad = root / "bad"
    bad.mkdir(exist_ok=True)
    cells = "".join(f"<td>column {i} with a long heading</td>" for i in range(20))
    (bad / "report.html").write_text(
        "<!doctype html><html><head><meta name='viewport' content='width=device-width'></head><body>"
        f"<table><tr>{cells}</tr></table><img src='gone.png'><script>console.error('boom')</script></body></html>")
    page = browser.new_page(viewport={"width": 390, "height": 844})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{server}/bad/report.html", wait_until="load")
    facts = page.evaluate(LAYOUT)
    page.screenshot(path=str(tmp_path / "bad.png"), full_page=True)
    page.close()
    assert facts["scrollWidth"] > 390
    assert any(not i["complete"] or i["natural"] == 0 for i in facts["images"])
    assert "boom" in errors and any("404" in e or "Failed to load" in e for e in errors)
    with Image.open(tmp_path / "bad.png") as im:
        assert im.width > 390
    json.dumps(facts)  # the facts are plain data (what a failure message shows)
