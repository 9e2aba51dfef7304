"""`iolab paper fastqueue`: rerun the FastQueue paper's measurements (Wei,
Lu, Zhou, "FastQueue: a high performance disk queue storage management
mechanism"; seed 002) on this machine, decide every claim with paired
ratios, and write a report (Markdown, HTML, PNG plots and the JSON behind
them).

The paper's claims, from its text (its figures' numbers are not in the
text we have):

- Figure 3 (section 3): with one file per message, "the SMTP DATA command
  and the delivery process Deliver, the two that deal with the disk queue,
  take clearly more processing time than the other commands";
- Figure 8 (section 5): with FastQueue, "the processing time of DATA and
  Deliver falls several-fold" (成倍下降);
- Figures 9 and 10 (section 5): "read and write performance of messages
  rises several-fold" (成倍的提高);
- section 1 and the conclusion: "FastQueue gets about 230% higher
  performance than the traditional disk queue" (SPECmail2000, 5,000 users,
  1 kB messages, 100 Mb/s Ethernet);
- the abstract: "more than an order of magnitude higher".
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Optional, Sequence

from scipy import stats

from iolab.document import Document
from iolab.paper import fastqueue_claims as claims
from iolab.paper.fastqueue_experiments import (BATCH_DELAY, CEILING, FULL, QUICK, READ_API, SYSTEMS,
                                               Plan, Results, Runner, progress_printer)

# The paper's Figures 3 and 8: each SMTP command and Deliver.
STEPS = [("EHLO/HELO", "helo"), ("MAIL", "mail"), ("RCPT", "rcpt"), ("DATA", "data"), ("QUIT", "quit"),
         ("Deliver", "deliver")]
# The commands that do not touch the queue (Figure 3's comparison).
OTHERS = ["helo", "mail", "rcpt", "quit"]
# The parts the server also times, to show where DATA's and Deliver's time goes.
DETAIL = [("DATA: the command line to its 354", "data_command"),
          ("DATA: the text, 354 to the final dot (the client sending)", "data_text"),
          ("Deliver: taken, waiting for a delivery worker", "deliver_wait"),
          ("Deliver: the delivery (SMTP to smtp-sink)", "deliver_send"),
          ("Deliver: outcome to acknowledgement durable", "deliver_ack"),
          ("take: one grouped read of the queue (per call)", "take")]
CONFIGS = list(SYSTEMS) + [s + CEILING for s in SYSTEMS]
NAN = float("nan")
# The paper's headline: "about 230% higher", i.e. 3.3 times.
HEADLINE = 3.3


def run(quick: bool, outdir: Path, seed: int = 1, reps: Optional[int] = None,
        quiet: bool = False) -> tuple[int, list[claims.Verdict]]:
    plan = QUICK if quick else FULL
    if reps:
        plan = Plan(**{**plan.__dict__, "mail_reps": reps, "queue_reps": max(2, (reps + 1) // 2)})
    results = Runner(plan, seed, progress_printer(quiet)).run()
    results.command = _command(quick, seed, outdir, reps)
    outdir.mkdir(parents=True, exist_ok=True)
    verdicts = write_report(results, quick, outdir)
    return (130 if results.interrupted else 0), verdicts


def _command(quick: bool, seed: int, outdir: Path, reps: Optional[int] = None) -> str:
    return ("iolab paper fastqueue" + (" --quick" if quick else "") + (f" --reps {reps}" if reps else "")
            + f" --seed {seed} -o {outdir}")


def rerender(src: Path, outdir: Path, plots: bool = True) -> list[claims.Verdict]:
    """The report again from an earlier run's JSON (`--from`), measuring
    nothing: for a report whose wording or tables changed after the run."""
    from iolab.cli.errors import UserError

    path = src / "paper-fastqueue.json"
    try:
        data = json.loads(path.read_text())
        results = Results(plan=data["plan"], seed=data["seed"], environment=data["environment"],
                          mail=data["mail_runs"], queue=data["queue_runs"], sync_probes=data["sync_probes"],
                          interrupted=data["interrupted"], wall_s=data["wall_s"], load_end=data["load_end"])
    except (OSError, ValueError, KeyError) as e:
        raise UserError(f"--from {src}: not the output of iolab paper fastqueue ({path}: {e})") from None
    results.command = data.get("command") or _command(data["quick"], data["seed"], src)
    outdir.mkdir(parents=True, exist_ok=True)
    return write_report(results, data["quick"], outdir, plots,
                        rendered_by=f"iolab paper fastqueue --from {src} -o {outdir}")


# -- the measurements, as per-repetition values ------------------------------------------------


def _by_rep(rows: list[dict]) -> dict[int, dict[str, dict]]:
    out: dict[int, dict[str, dict]] = {}
    for r in rows:
        out.setdefault(r["rep"], {})[r["system"]] = r
    return out


def command_ms(row: Optional[dict], step: str) -> float:
    """The server's mean processing time of `step` in one run, ms."""
    if not row:
        return NAN
    t = (row.get("server_commands") or {}).get(step) or {}
    return float(t["mean_ms"]) if t.get("count") else NAN


def _value(row: Optional[dict], key: str) -> float:
    if not row:
        return NAN
    v = row.get(key)
    return float(v) if isinstance(v, (int, float)) else NAN


def _best(vals: Sequence[float], smallest: bool = False) -> float:
    ok = [v for v in vals if math.isfinite(v) and v > 0]
    if not ok:
        return NAN
    return min(ok) if smallest else max(ok)


def _queue_cells(rows: list[dict]) -> dict[int, dict[tuple[int, int], dict[str, dict]]]:
    out: dict[int, dict[tuple[int, int], dict[str, dict]]] = {}
    for r in rows:
        out.setdefault(r["rep"], {}).setdefault((r["size"], r["producers"]), {})[r["system"]] = r
    return out


def _cells(rows: list[dict]) -> list[tuple[int, int]]:
    return sorted({(r["size"], r["producers"]) for r in rows})


def _cell_name(cell: tuple[int, int]) -> str:
    size, prod = cell
    return f"{_size(size)} × {prod} producers"


def _size(b: int) -> str:
    return f"{b // 1024} KiB" if b >= 1024 and b % 1024 == 0 else f"{b} B"


# -- the claims ----------------------------------------------------------------------------------


def figure3_claim(mail: list[dict], step: str, name: str) -> claims.Verdict:
    """`step` takes clearly longer than every command that does not touch
    the queue, with the file-per-message queue (Figure 3)."""
    reps = _by_rep(mail)
    logs, parts = [], []
    for rep in sorted(reps):
        fd = reps[rep].get("filedir")
        logs.append(claims.log_ratio(command_ms(fd, step), _best([command_ms(fd, o) for o in OTHERS])))
    for label, o in STEPS:
        if o in OTHERS:
            parts.append((f"{name} ÷ {label}", claims.paired(
                [(command_ms(reps[r].get("filedir"), step), command_ms(reps[r].get("filedir"), o)) for r in sorted(reps)])))
    return claims.decide(
        "Figure 3", f"With one file per message, {name} takes clearly longer than every other SMTP command",
        "“DATA and Deliver, the two that deal with the disk queue, take clearly more processing time than the other "
        "commands” (明显多, section 3)",
        claims.Target("at least", 1 + claims.EQUIVALENCE), claims.from_logs(logs), parts=parts,
        note=f"{name} ÷ the slowest of EHLO/HELO, MAIL, RCPT, QUIT in the same run (server-side means)",
        short=f"{name} ≫ other commands (file per message)")


def figure8_claim(mail: list[dict], step: str, name: str) -> claims.Verdict:
    """FastQueue cuts `step`'s processing time several-fold (Figure 8)."""
    reps = _by_rep(mail)
    measured, ceiling = [], []
    for rep in sorted(reps):
        got = reps[rep]
        base = command_ms(got.get("filedir"), step)
        measured.append((base, command_ms(got.get("fastqueue"), step)))
        floor = _best([command_ms(got.get(s + CEILING), step) for s in SYSTEMS], smallest=True)
        ceiling.append((base, floor))
    return claims.decide(
        "Figure 8", f"FastQueue cuts {name}'s processing time several-fold (file per message ÷ FastQueue)",
        "“the processing time of DATA and Deliver falls several-fold” (成倍下降, section 5)",
        claims.Target("at least", 2.0), claims.paired(measured), claims.paired(ceiling),
        note="server-side mean per run; ceiling: file per message on disk ÷ the faster queue on tmpfs",
        short=f"{name} time: file per message ÷ FastQueue")


def queue_claim(queue: list[dict], metrics: Sequence[str], figure: str, claim: str, paper: str,
                target: claims.Target, note: str = "", short: str = "") -> claims.Verdict:
    """FastQueue ÷ file per message in FastQueue's own benchmark, decided on
    the per-repetition mean over the cells (sizes × producers) of `metrics`."""
    reps = _queue_cells(queue)
    cells = _cells(queue)
    measured, ceiling = [], []
    for rep in sorted(reps):
        m, c = [], []
        for cell in cells:
            got = reps[rep].get(cell, {})
            for key in metrics:
                base = _value(got.get("filedir"), key)
                m.append(claims.log_ratio(_value(got.get("fastqueue"), key), base))
                c.append(claims.log_ratio(_best([_value(got.get(s + CEILING), key) for s in SYSTEMS]), base))
        measured.append(m)
        ceiling.append(c)
    parts = []
    for key in metrics:
        for cell in cells:
            parts.append((f"{_cell_name(cell)}" + (f" ({METRIC_NAMES[key]})" if len(metrics) > 1 else ""),
                          claims.paired([(_value(reps[r].get(cell, {}).get("fastqueue"), key),
                                          _value(reps[r].get(cell, {}).get("filedir"), key)) for r in sorted(reps)])))
    return claims.decide(figure, claim, paper, target, claims.mean_over_cells(measured),
                         claims.mean_over_cells(ceiling), parts, note, short)


METRIC_NAMES = {"write_msgs_per_s": "write", "read_msgs_per_s": "warm read", "cold_read_msgs_per_s": "cold read"}


def headline_claim(mail: list[dict]) -> claims.Verdict:
    reps = _by_rep(mail)
    e2e, acc, ceiling = [], [], []
    for rep in sorted(reps):
        got = reps[rep]
        base = _value(got.get("filedir"), "delivered_per_s")
        e2e.append((_value(got.get("fastqueue"), "delivered_per_s"), base))
        acc.append((_value(got.get("fastqueue"), "accepted_per_s"), _value(got.get("filedir"), "accepted_per_s")))
        ceiling.append((_best([_value(got.get(s + CEILING), "delivered_per_s") for s in SYSTEMS]), base))
    return claims.decide(
        "Section 1, conclusion", "The whole server with FastQueue ÷ with one file per message (end-to-end msg/s)",
        "“FastQueue gets about 230% higher performance than the traditional disk queue” (高出约230%; SPECmail2000, "
        "5,000 users, 1 kB)",
        claims.Target("about", HEADLINE), claims.paired(e2e), claims.paired(ceiling),
        parts=[("accepted msg/s (until the load generator finished)", claims.paired(acc))],
        note="end to end: messages ÷ time until smtp-sink counted them all; ceiling: the faster server with its "
             "queue on tmpfs ÷ the file-per-message server on disk",
        short="whole server, end to end: FastQueue ÷ file per message")


def all_claims(results: Results) -> list[claims.Verdict]:
    mail = [r for r in results.mail if not r.get("errors")]
    out = []
    if mail:
        out += [figure3_claim(mail, "data", "DATA"), figure3_claim(mail, "deliver", "Deliver"),
                figure8_claim(mail, "data", "DATA"), figure8_claim(mail, "deliver", "Deliver")]
    if results.queue:
        out += [
            queue_claim(results.queue, ["write_msgs_per_s"], "Figure 9",
                        "FastQueue writes messages several-fold faster (msg/s; MB/s is the same ratio)",
                        "“read and write performance rises several-fold” (成倍的提高, section 5)",
                        claims.Target("at least", 2.0), "decided on the mean over sizes × producers",
                        "queue writes: FastQueue ÷ file per message"),
            queue_claim(results.queue, ["cold_read_msgs_per_s"], "Figure 10",
                        "FastQueue reads messages several-fold faster, from the disk (files evicted from the page cache)",
                        "“read and write performance rises several-fold” (成倍的提高, section 5)",
                        claims.Target("at least", 2.0), "decided on the mean over sizes × producers",
                        "queue reads, cold: FastQueue ÷ file per message"),
            queue_claim(results.queue, ["read_msgs_per_s"], "Figure 10",
                        "FastQueue reads messages several-fold faster, from the page cache (warm)",
                        "“read and write performance rises several-fold” (成倍的提高, section 5)",
                        claims.Target("at least", 2.0), "decided on the mean over sizes × producers",
                        "queue reads, warm: FastQueue ÷ file per message"),
        ]
    if mail:
        out.append(headline_claim(mail))
    if results.queue:
        out.append(queue_claim(
            results.queue, ["write_msgs_per_s", "cold_read_msgs_per_s"], "Abstract",
            "FastQueue is more than an order of magnitude faster than the traditional disk queue (queue writes and "
            "cold reads)",
            "“performance of the FastQueue is more than an order of magnitude higher than that of traditional disk "
            "queue” (abstract; the body says 230%)",
            claims.Target("at least", 10.0), "decided on the mean over the write and cold-read cells together",
            "queue writes and cold reads, ≥ 10×"))
    return out


# -- tables and plots ----------------------------------------------------------------------------


def _mean_ci(vals: Sequence[float]) -> tuple[float, float]:
    v = [x for x in vals if math.isfinite(x)]
    if not v:
        return NAN, NAN
    m = sum(v) / len(v)
    if len(v) < 2:
        return m, NAN
    return m, float(stats.t.ppf(0.975, len(v) - 1) * stats.sem(v)) if max(v) > min(v) else 0.0


def _cell(vals: Sequence[float]) -> str:
    """Mean ± 95% half-width over runs."""
    m, h = _mean_ci(vals)
    if not math.isfinite(m):
        return "-"
    if not math.isfinite(h):
        return claims.number(m)
    return f"{claims.number(m)} ± {claims.number(h)}"


def commands_table(mail: list[dict]) -> tuple[list[str], list[list[str]]]:
    reps = _by_rep(mail)
    header = ["step"] + [f"{c} (ms)" for c in CONFIGS] + ["file per message ÷ FastQueue"]
    rows = []
    for label, step in STEPS + DETAIL:
        row = [label]
        for c in CONFIGS:
            row.append(_cell([command_ms(reps[r].get(c), step) for r in sorted(reps)]))
        row.append(claims.paired([(command_ms(reps[r].get("filedir"), step), command_ms(reps[r].get("fastqueue"), step))
                                  for r in sorted(reps)]).text())
        rows.append(row)
    # A take call returns a different number of messages for each queue:
    # its time per message taken, too.
    def per_taken(row: Optional[dict]) -> float:
        cmds = (row or {}).get("server_commands") or {}
        taken = cmds.get("taken") or 0
        return float(cmds["take"]["total_ms"]) / taken if taken and cmds.get("take") else NAN

    row = ["take: per message taken (the calls' time ÷ the messages they returned)"]
    for c in CONFIGS:
        row.append(_cell([per_taken(reps[r].get(c)) for r in sorted(reps)]))
    row.append(claims.paired([(per_taken(reps[r].get("filedir")), per_taken(reps[r].get("fastqueue")))
                              for r in sorted(reps)]).text())
    rows.append(row)
    counts = ["messages timed per run (DATA)"]
    for c in CONFIGS:
        n = [_value(((reps[r].get(c) or {}).get("server_commands") or {}).get("data"), "count") for r in sorted(reps)]
        m, _ = _mean_ci(n)
        counts.append(f"{m:.0f}" if math.isfinite(m) else "-")
    rows.append(counts + [""])
    return header, rows


def throughput_table(mail: list[dict]) -> tuple[list[str], list[list[str]]]:
    header = ["system", "queue on", "accepted msg/s", "end-to-end msg/s", "DATA p50 ms (client)",
              "DATA p99 ms (client)", "disk bytes/msg", "fsyncs/msg (server's count)", "runs"]
    rows = []
    for c in CONFIGS:
        rs = [r for r in mail if r["system"] == c]
        if not rs:
            continue
        rows.append([c, "tmpfs" if c.endswith(CEILING) else "ext4", _cell([r["accepted_per_s"] for r in rs]),
                     _cell([r["delivered_per_s"] for r in rs]), _cell([r["data_ms_p50"] for r in rs]),
                     _cell([r["data_ms_p99"] for r in rs]), _cell([r["disk_bytes_per_msg"] for r in rs]),
                     _cell([_value(r, "server_syncs_per_msg") for r in rs]), str(len(rs))])
    return header, rows


def queue_table(queue: list[dict], key: str, scale: float = 1.0) -> tuple[list[str], list[list[str]]]:
    reps = _queue_cells(queue)
    header = ["size", "producers"] + CONFIGS + ["FastQueue ÷ file per message"]
    rows = []
    for cell in _cells(queue):
        row = [_size(cell[0]), str(cell[1])]
        for c in CONFIGS:
            row.append(_cell([_value(reps[r].get(cell, {}).get(c), key) * scale for r in sorted(reps)]))
        row.append(claims.paired([(_value(reps[r].get(cell, {}).get("fastqueue"), key),
                                   _value(reps[r].get(cell, {}).get("filedir"), key)) for r in sorted(reps)]).text())
        rows.append(row)
    return header, rows


COLORS = {"filedir": "#c44e52", "fastqueue": "#4c72b0", "filedir@tmpfs": "#e8a0a2", "fastqueue@tmpfs": "#9fb6dd"}


def _plots(results: Results, mail: list[dict], outdir: Path) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files: dict[str, str] = {}
    reps = _by_rep(mail)
    if mail:
        for name, configs, title in (
                ("fig3_commands_filedir.png", ["filedir"],
                 "Figure 3: processing time per command, one file per message"),
                ("fig8_commands.png", CONFIGS,
                 "Figure 8: processing time per command, both queues (pale: queue on tmpfs)")):
            bars = {c: [_mean_ci([command_ms(reps[r].get(c), step) for r in sorted(reps)]) for _, step in STEPS]
                    for c in configs}
            if not any(m > 0 for got in bars.values() for m, _ in got):
                continue  # nothing measured (an interrupted run)
            fig, ax = plt.subplots(figsize=(8, 3.8))
            width = 0.8 / len(configs)
            for k, c in enumerate(configs):
                means = [m if math.isfinite(m) else 0 for m, _ in bars[c]]
                errs = [h if math.isfinite(h) else 0 for _, h in bars[c]]
                xs = [i + (k - (len(configs) - 1) / 2) * width for i in range(len(STEPS))]
                ax.bar(xs, means, width, yerr=errs, capsize=3, color=COLORS[c], label=c)
            ax.set_yscale("log")
            ax.set_xticks(range(len(STEPS)), [s for s, _ in STEPS])
            ax.set_ylabel("mean processing time (ms, log)")
            ax.set_title(f"{title}\n({len(reps)} runs each, 95% CI; server-side timers)", fontsize=9)
            if len(configs) > 1:
                ax.legend(fontsize=8)
            fig.tight_layout()
            fig.savefig(outdir / name, dpi=110)
            plt.close(fig)
            files[name.split("_")[0]] = name
        fig, ax = plt.subplots(figsize=(7, 3.6))
        width = 0.38
        for k, (key, label) in enumerate((("accepted_per_s", "accepted"), ("delivered_per_s", "end to end"))):
            means, errs = [], []
            for c in CONFIGS:
                m, h = _mean_ci([r[key] for r in mail if r["system"] == c])
                means.append(m if math.isfinite(m) else 0)
                errs.append(h if math.isfinite(h) else 0)
            ax.bar([i + (k - 0.5) * width for i in range(len(CONFIGS))], means, width, yerr=errs, capsize=4,
                   label=label, color=["#55a868", "#8172b2"][k])
        ax.set_xticks(range(len(CONFIGS)), CONFIGS)
        ax.set_ylabel("messages/s")
        p = results.plan
        ax.set_title(f"The whole server: {p['users']} sessions, {p['messages']} × {p['size']} B per run (95% CI)",
                     fontsize=9)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(outdir / "headline.png", dpi=110)
        plt.close(fig)
        files["headline"] = "headline.png"
    if results.queue:
        qr = _queue_cells(results.queue)
        cells = _cells(results.queue)
        sizes = sorted({c[0] for c in cells})
        prods = sorted({c[1] for c in cells})
        styles = ["-", "--", ":", "-."]
        for name, keys, title in (
                ("fig9_write.png", [("write_msgs_per_s", "")], "Figure 9: message write performance"),
                ("fig10_read.png", [("cold_read_msgs_per_s", "cold"), ("read_msgs_per_s", "warm")],
                 "Figure 10: message read performance (one consumer; mean over the producer counts that wrote the messages)")):
            fig, axes = plt.subplots(1, 2, figsize=(11.5, 3.8))
            for c in CONFIGS:
                # Writes: one line per producer count. Reads: one consumer
                # whatever wrote the messages, so one line per kind of read.
                groups = [(j, [prod]) for j, prod in enumerate(prods)] if name.startswith("fig9") else [(0, prods)]
                for j, group in groups:
                    for key, kind in keys:
                        if kind == "warm" and c.endswith(CEILING):
                            continue  # on tmpfs warm and cold are the same reads
                        ms = [_mean_ci([_value(qr[r].get((s, prod), {}).get(c), key)
                                        for r in sorted(qr) for prod in group])[0] for s in sizes]
                        lab = c + (f", {group[0]} producers" if len(groups) > 1 else "") + (f", {kind}" if kind else "")
                        style = styles[j % len(styles)] if kind != "warm" else ":"
                        axes[0].plot(sizes, ms, style, marker="o", color=COLORS[c], label=lab, ms=3)
                        axes[1].plot(sizes, [m * s / 1e6 for m, s in zip(ms, sizes)], style, marker="o",
                                     color=COLORS[c], ms=3)
            for ax, ylab in ((axes[0], "messages/s"), (axes[1], "MB/s")):
                ax.set_xscale("log", base=2)
                ax.set_yscale("log")
                ax.set_xlabel("message size (bytes)")
                ax.set_ylabel(ylab)
            fig.suptitle(f"{title}\nFastQueue's benchmark, {len(qr)} repetitions (means; pale: the queue on tmpfs)",
                         fontsize=9)
            fig.tight_layout(rect=(0, 0, 0.8, 1))
            handles, labels = axes[0].get_legend_handles_labels()
            fig.legend(handles, labels, loc="center right", fontsize=7)
            fig.savefig(outdir / name, dpi=110)
            plt.close(fig)
            files[name.split("_")[0]] = name
    return files


# -- the report ----------------------------------------------------------------------------------


def _loads(rows: list[dict], key: str) -> str:
    firsts = [float(r[key].split()[0]) for r in rows if r.get(key)]
    if not firsts:
        return "-"
    return f"{min(firsts):.2f}–{max(firsts):.2f}"


def write_report(results: Results, quick: bool, outdir: Path, plots: bool = True,
                 rendered_by: str = "") -> list[claims.Verdict]:
    outdir.mkdir(parents=True, exist_ok=True)
    mail = [r for r in results.mail if not r.get("errors")]
    failed = [r for r in results.mail if r.get("errors")]
    verdicts = all_claims(results)
    files = _plots(results, mail, outdir) if plots else {}
    env = results.environment
    p = results.plan
    (outdir / "paper-fastqueue.json").write_text(json.dumps(
        {"plan": p, "quick": quick, "seed": results.seed, "interrupted": results.interrupted,
         "command": results.command,
         "environment": env, "load_end": results.load_end, "wall_s": results.wall_s,
         "equivalence_margin": claims.EQUIVALENCE, "about_band": claims.ABOUT, "labels": list(claims.LABELS),
         "read_api": READ_API, "batch_delay_s": BATCH_DELAY,
         "claims": [v.as_dict() for v in verdicts], "mail_runs": results.mail, "queue_runs": results.queue,
         "sync_probes": results.sync_probes}, indent=1, sort_keys=True, default=str) + "\n")

    load0 = float(env["load_start"].split()[0])
    doc = Document("The FastQueue paper, measured" + (" (quick)" if quick else ""))
    doc.bullets([f"measured by: {results.command or _command(quick, results.seed, outdir)}"]
                + ([f"this report was rendered again from that run's JSON, measuring nothing: {rendered_by}"]
                   if rendered_by else []) + [
        f"started {env['started']}; {results.wall_s:.0f} s wall time; {env['cpus']} CPUs ({env['cpu_model']}), "
        f"Linux {env['kernel']}",
        f"**load average (1, 5, 15 min) at the start: {env['load_start']}**; at the end: {results.load_end}; "
        f"1-minute figure before each mail run: {_loads(results.mail, 'load_before')} (the benchmark's own sessions "
        "count in it once it runs)",
        f"the queues on: {env.get('queues_on', '-')}; the ceiling runs on tmpfs ({env.get('tmpfs', '-')})",
        f"mail server: {p['mail_reps']} repetitions × 4 runs (both queues, on ext4 and on tmpfs), order shuffled in "
        f"each repetition (seed {results.seed}); queues alone: {p['queue_reps']} repetitions × "
        f"{len(p['sizes']) * len(p['producers'])} cells × 4 runs",
        "fdatasync of a 4 KiB write on the queues' file system (p50/p99 µs, per repetition): "
        + (", ".join(f"{s['p50_us']:.0f}/{s['p99_us']:.0f}" for s in results.sync_probes) or "-"),
        "the JSON behind every table and plot: paper-fastqueue.json",
    ] + (["**INTERRUPTED**: only the runs that finished are included"] if results.interrupted else [])
      + ([f"**{len(failed)} mail run(s) had errors and are left out**: "
          + "; ".join(f"{r['system']} rep {r['rep'] + 1}: {r['errors']}" for r in failed)] if failed else [])
      + ([f"**The machine was not quiet**: its load average was {load0:.2f} at the start (above 1). Other work "
          "shared the 2 cores and the disk; the figures may move when rerun on a quiet machine."]
         if load0 > 1 else []))

    doc.heading("What the paper measured, and what stands in for it here")
    doc.table(["the paper", "here"], [
        ["FSmail, the authors' mail server, first with one file per message in 10 hashed directories, then with "
         "FastQueue", "`iolab mail serve` with `--queue filedir` (one file per message, fsync of file and directory, "
         "10 hashed directories) and with `--queue fastqueue`: the same server, only the queue differs"],
        ["SPECmail2000 simulating 5,000 users (a benchmark with a mix of SMTP and POP3 sessions, users arriving at "
         "a set rate, and a quality-of-service criterion)",
         f"Postfix's `smtp-source`: {p['users']} concurrent SMTP sessions, one message per connection, "
         f"{p['messages']} messages per run, as fast as the server answers (closed loop); no POP3. SPECmail2000 is "
         "a licensed benchmark, not available here"],
        ["1 kB messages on average", f"every message body {p['size']} B"],
        ["delivery by FSmail (local mailboxes or remote servers)",
         "relay over SMTP to Postfix's `smtp-sink` on loopback, which counts and discards"],
        ["clients on other machines, 100 Mb/s Ethernet", "loopback TCP; the load generator, the sink and the server "
         "share this machine's CPUs"],
        ["their server and disk (2003: a seek and a rotation per synchronous write)",
         "a virtual machine's disk, through a loop device; fdatasync costs the figures above"],
        ["per-command times from test code inside FSmail (Figures 3, 4, 8)",
         "the server's own timers (`--stats`: `commands`): each command from its line read to its reply written; "
         "DATA from the end of the text to the `250` (the durable enqueue included); Deliver from the queue's "
         "`take` returning the message to its acknowledgement durable"],
        ["message write and read benchmarks of the two queues (Figures 9, 10; their setup is not described)",
         f"FastQueue's own benchmark (`iolab queue bench`'s machinery): producers enqueue durably in a closed loop "
         f"for {p['seconds']:g} s (at most {p['max_mib']} MiB), one consumer reads everything back into a reused "
         f"buffer (`--read-api {READ_API}`) and deletes it, half warm, half after the files were evicted from the "
         f"page cache (cold); sizes {', '.join(_size(s) for s in p['sizes'])}, {', '.join(map(str, p['producers']))} "
         "producers"],
        ["the numbers in Figures 3, 8, 9, 10", "not available: the text we have does not carry the figures' values, "
         "so each claim is the text's own words about them"],
    ])

    doc.heading("How claims are decided")
    doc.para(
        "Each claim is a ratio of two things measured in the same repetition (the two queues run back to back, in a "
        "shuffled order, on a fresh file system; or two commands of one run), so every comparison is paired: per "
        "repetition the log of the ratio, then the geometric mean of the ratios with a Student-t interval on the "
        "logs. A claim over several message sizes and producer counts is decided on the per-repetition mean of "
        f"its cells' log ratios. Labels: **not distinguishable** (checked first): the two sides are equivalent within "
        f"±{claims.EQUIVALENCE:.0%} by two one-sided tests at 5% (the 90% interval inside "
        f"[{1 / (1 + claims.EQUIVALENCE):.3f}, {1 + claims.EQUIVALENCE:.2f}]); **reproduced**: for “at least k×” "
        "the whole 95% interval is at or above k, for “about k×” the 90% interval lies inside "
        f"[k/{1 + claims.ABOUT:.1f}, k·{1 + claims.ABOUT:.1f}]; **refuted**: the 95% interval excludes the claim "
        "(wholly below k, or wholly outside the band); **inconclusive**: none of these. “Several-fold” "
        "(成倍) is read as at least 2×, “clearly more” (明显多) as at least "
        f"{1 + claims.EQUIVALENCE:.1f}×, “about 230% higher” as about {HEADLINE}×. "
        "The **ceiling** beside a claim is the same ratio with the compared queue replaced by the better of the two "
        "queues on tmpfs (no disk cost at all): the most any queue could gain over the baseline on this machine. "
        "When the whole ceiling interval lies below the paper's figure, no queue could reach it here: the result "
        "is bounded by the machine (two cores running the server, the load generator and the sink), not by the "
        "queue. Wall-clock runs are never deterministic; no interval here has width 0.")

    doc.heading("The claims")
    doc.table(["figure", "claim", "the paper", "target", "measured: geometric mean [95% CI]", "verdict",
               "ceiling [95% CI]", "note"],
              [[v.figure, v.claim, v.paper, v.target.text(), v.measured.text(), v.verdict,
                v.ceiling.text() if v.ceiling else "-", v.note] for v in verdicts])
    for v in verdicts:
        if v.parts:
            doc.heading(f"{v.figure}: {v.claim}", level=3)
            doc.table(["part", "ratio [95% CI]"], [[c, r.text()] for c, r in v.parts])

    if mail:
        doc.heading("Figures 3 and 8: processing time of each SMTP command and of Deliver")
        doc.para(
            "Server-side mean processing time per run (ms), mean ± 95% half-width over the runs. A command runs "
            "from its line read to its reply written; DATA from the end of the text to the `250`, which includes "
            "the durable enqueue (FastQueue: the group commit's fdatasync; one file per message: create, write, "
            "fsync of the file and of its directory); Deliver from the queue's `take` returning the message to its "
            "acknowledgement being durable (FastQueue: a delete flag, grouped, fdatasync; one file per message: "
            "unlink, which the baseline does not sync, as Postfix does not). The paper's DATA also counts receiving "
            "the text from the network: that part, and where Deliver's time goes, are the rows after Deliver.")
        header, rows = commands_table(mail)
        doc.table(header, rows)
        for key in ("fig3", "fig8"):
            if key in files:
                doc.image(files[key])

        doc.heading("The headline: the whole server")
        doc.para(
            "accepted msg/s = smtp-source's messages ÷ the time until the last smtp-source exits; end-to-end msg/s = "
            "the same messages ÷ the time until smtp-sink has counted all of them; DATA p50/p99 from a small client "
            "beside the load (sending DATA to the final reply); disk bytes/msg from the loop device's own counter "
            "(0 on tmpfs). Mean ± 95% half-width over runs.")
        header, rows = throughput_table(mail)
        doc.table(header, rows)
        reps = _by_rep(mail)
        own = claims.paired([(_value(reps[r].get("fastqueue"), "delivered_per_s"),
                              _value(reps[r].get("fastqueue" + CEILING), "delivered_per_s")) for r in sorted(reps)])
        base = claims.paired([(_value(reps[r].get("filedir"), "delivered_per_s"),
                               _value(reps[r].get("filedir" + CEILING), "delivered_per_s")) for r in sorted(reps)])
        doc.bullets([f"FastQueue on disk ÷ FastQueue on tmpfs (its share of its own ceiling), end to end: {own.text()}",
                     f"one file per message on disk ÷ on tmpfs, end to end: {base.text()}"])
        if "headline" in files:
            doc.image(files["headline"])

    if results.queue:
        doc.heading("Figures 9 and 10: message write and read performance of the two queues")
        doc.para(
            "FastQueue's own benchmark, each cell once per repetition for each queue on ext4 and on tmpfs. Write: "
            "producers enqueue in a closed loop, each call returning once the message is durable (FastQueue: "
            f"gathered into rounds, {BATCH_DELAY * 1e3:g} ms timer, one fdatasync per round; one file per message: "
            "temporary file, fsync, rename into one of 64 hashed directories, directory fsync). Read: one consumer "
            "takes everything back into one reused buffer and deletes it (FastQueue: grouped reads of adjacent "
            "records, delete flags synced per batch of 512; one file per message: open, read, unlink per file); the "
            "first half warm, as the writes left it in the page cache, the second half cold, after "
            "`posix_fadvise(DONTNEED)` of every file (directory entries and inodes stay cached, which favours the "
            "baseline). On tmpfs cold and warm are the same memory reads. Mean ± 95% half-width over repetitions.")
        for key, title, scale in (("write_msgs_per_s", "write, messages/s", 1.0),
                                  ("write_mb_per_s", "write, MB/s", 1.0),
                                  ("cold_read_msgs_per_s", "read from the disk (cold), messages/s", 1.0),
                                  ("read_msgs_per_s", "read from the page cache (warm), messages/s", 1.0)):
            doc.heading(title, level=3)
            header, rows = queue_table(results.queue, key, scale)
            doc.table(header, rows)
        for key in ("fig9", "fig10"):
            if key in files:
                doc.image(files[key])

    doc.heading("What this cannot measure")
    doc.bullets([
        "SPECmail2000 itself (licensed; POP3 retrieval, its arrival process and its quality-of-service criterion "
        "are not reproduced): the load is SMTP only, closed loop, one message per connection.",
        "The paper's hardware: its disk made every synchronous write cost a seek and a rotation, which is what "
        "FastQueue's gathered, sequential writes save; a virtual disk whose fdatasync takes a fraction of a "
        "millisecond leaves far less to save. The ceiling rows show how much there is to gain here at all.",
        "Separate client machines and a 100 Mb/s network: here the load generator, the sink and the server share "
        "the same cores, so a faster queue also gives its CPU time to the load generator.",
        "The values in the paper's figures (not in the text we have) and its Figure 4 (file against network I/O "
        "inside FSmail's DATA), for which the server has no timer.",
        "Fragmentation after long operation (section 2): every run starts on a fresh file system.",
    ])
    doc.write(outdir, "report")
    return verdicts
