"""Tests of ``iolab emu`` (python/iolab/cli/emu.py, python/iolab/emu.py)
against QEMU's own NBD client (qemu-io, qemu-img) and libnbd (nbdinfo).

They need qemu-utils and libnbd-bin (``make deps`` installs them); like the
bench tests they fail, not skip, when those are missing.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iolab.cli import main
from iolab.emu import check_log, read_log
from nbdraw import CMD_WRITE, NbdClient

DATA = Path(__file__).resolve().parents[2] / "data" / "disksim"
HP_BYTES = 1962 * 19 * 72 * 512


@pytest.fixture(scope="module", autouse=True)
def nbd_clients():
    missing = [t for t in ("qemu-io", "qemu-img", "nbdinfo", "qemu-system-x86_64") if shutil.which(t) is None]
    assert not missing, f"missing {', '.join(missing)}: run `make deps` (Debian qemu-utils, libnbd-bin, qemu-system-x86)"


_running: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def _no_server_left():
    yield
    while _running:
        p = _running.pop()
        if p.poll() is None:
            p.kill()
        p.communicate()


class Served:
    """`iolab emu` running as a user would run it, in a subprocess."""

    def __init__(self, tmp: Path, *args: str, image: str = "disk.img"):
        self.sock = tmp / "nbd.sock"
        self.log = tmp / "log.csv"
        self.image = tmp / image
        self.uri = f"nbd+unix:///?socket={self.sock}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "iolab", "emu", "--image", str(self.image), "--socket", str(self.sock),
             "--log", str(self.log), *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        _running.append(self.proc)
        deadline = time.monotonic() + 30
        while not self.sock.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                out, err = self.proc.communicate(timeout=10)
                raise AssertionError(f"iolab emu did not start:\n{out}\n{err}")
            time.sleep(0.05)

    def qemu_io(self, *commands: str, stdin: str | None = None) -> str:
        cmd = ["qemu-io", "-f", "raw", self.uri]
        for c in commands:
            cmd += ["-c", c]
        p = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stdout + p.stderr
        assert "Pattern verification failed" not in p.stdout, p.stdout
        return p.stdout

    def stop(self, sig: int = signal.SIGTERM) -> tuple[int, str, str]:
        self.proc.send_signal(sig)
        out, err = self.proc.communicate(timeout=60)
        return self.proc.returncode, out, err


def test_qemu_io_reads_back_what_it_wrote_and_sigterm_stops_cleanly(tmp_path):
    srv = Served(tmp_path, "--disk", "fixed", "--fixed-ms", "1")
    out = srv.qemu_io(
        "write -P 0x5a 1M 64k", "read -P 0x5a 1M 64k", "write -P 0x33 4097 1000", "read -P 0x33 4097 1000",
        "flush", "write -z 1M 4k", "read -P 0 1M 4k", "read -P 0x5a 1052672 60k", "discard 8M 64k",
        "aio_write -P 0x77 16M 4k", "aio_write -P 0x78 16781312 4k", "aio_flush", "read -P 0x78 16781312 4k",
    )
    assert out.count("read ") == 5 and "wrote 1000/1000 bytes at offset 4097" in out
    info = subprocess.run(["qemu-img", "info", "--output=json", srv.uri], capture_output=True, text=True, check=True)
    assert json.loads(info.stdout)["virtual-size"] == 1 << 40
    code, out, err = srv.stop(signal.SIGTERM)
    assert code == 0, err
    assert "fixed service time 1000000 ns" in out and "stopped:" in out and "log flushed" in out
    assert not srv.sock.exists(), "the socket is removed at stop"
    with open(srv.image, "rb") as f:
        f.seek(1 << 20)
        assert f.read(4096) == b"\0" * 4096
        assert f.read(60 << 10) == b"\x5a" * (60 << 10)
        f.seek(4097)
        assert f.read(1000) == b"\x33" * 1000
        f.seek(16 << 20)
        assert f.read(8192) == b"\x77" * 4096 + b"\x78" * 4096
    log = read_log(str(srv.log))
    df = log.requests
    assert log.header["disk"]["preset"] == "fixed"
    assert set(df["op"]) >= {"read", "write", "flush", "write_zeroes", "trim"}
    assert (df["error"] == "").all()
    assert (df.loc[df["op"] == "read", "service_ns"] == 1_000_000).all()


# A boot sector (8086 real mode) that copies itself to the disk's second
# sector through the BIOS, then halts:
#   xor ax,ax; mov es,ax; mov ds,ax; mov ax,0x0301 (write 1 sector);
#   mov cx,0x0002 (cylinder 0, sector 2); mov dh,0 (head 0; dl = boot drive);
#   mov bx,0x7c00 (es:bx = itself); int 0x13; cli; hlt; jmp $-1
BOOT_CODE = bytes.fromhex("31c0 8ec0 8ed8 b80103 b90200 b600 bb007c cd13 fa f4 ebfd".replace(" ", ""))
BOOT_SECTOR = BOOT_CODE + bytes(510 - len(BOOT_CODE)) + b"\x55\xaa"


def test_a_qemu_guest_boots_from_the_emulated_disk_and_writes_to_it(tmp_path):
    """QEMU's own stack end to end: SeaBIOS reads the boot sector through
    virtio-blk and QEMU's NBD client, and the boot code's BIOS write lands
    in the image, with the model's timing."""
    (tmp_path / "disk.img").write_bytes(BOOT_SECTOR)
    srv = Served(tmp_path, "--disk", "hp97560")
    qemu = subprocess.Popen(
        ["qemu-system-x86_64", "-accel", "tcg", "-m", "32", "-display", "none", "-serial", "none",
         "-monitor", "none", "-nic", "none", "-no-reboot", "-boot", "c",
         "-drive", f"file=nbd:unix:{srv.sock},format=raw,if=virtio"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    _running.append(qemu)
    deadline = time.monotonic() + 120
    copied = False
    while not copied and time.monotonic() < deadline and qemu.poll() is None:
        time.sleep(0.2)
        with open(srv.image, "rb") as f:
            copied = f.read(1024) == BOOT_SECTOR * 2
    qemu.kill()
    _, qemu_err = qemu.communicate()
    assert copied, f"the guest did not write sector 1: {qemu_err}"
    assert srv.stop()[0] == 0
    report = check_log(str(srv.log))
    assert report.ok
    df = report.requests
    boot = df[(df["op"] == "read") & (df["sector"] == 0)]
    copy = df[(df["op"] == "write") & (df["sector"] == 1) & (df["nr_sectors"] == 1)]
    assert len(boot) >= 1 and len(copy) == 1, df
    assert (boot["service_ns"] > 0).all() and copy["service_ns"].iloc[0] > 1_000_000


def test_ctrl_c_exits_130_after_a_clean_stop(tmp_path):
    srv = Served(tmp_path, "--disk", "hp97560", "--zero-latency")
    srv.qemu_io("write -P 1 0 4k")
    code, out, err = srv.stop(signal.SIGINT)
    assert code == 130, err
    assert "zero latency" in out and "stopped: 2 requests" in out
    assert not srv.sock.exists()


def test_nbdinfo_sees_the_model(tmp_path):
    srv = Served(tmp_path, "--disk", "hp97560")
    p = subprocess.run(["nbdinfo", "--json", srv.uri], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    export = json.loads(p.stdout)["exports"][0]
    assert export["export-size"] == HP_BYTES
    assert export["is_rotational"] is True and export["can_flush"] is True and export["can_zero"] is True
    assert "hp97560" in export["description"]
    srv.stop()
    assert os.path.getsize(srv.image) == HP_BYTES


def test_random_reads_take_the_model_time_and_the_log_checks_out(tmp_path, capsys):
    srv = Served(tmp_path, "--disk", "hp97560")
    rng = random.Random(7)
    n = 30
    script = "".join(f"read {rng.randrange(HP_BYTES // 4096) * 4096} 4k\n" for _ in range(n))
    t0 = time.monotonic()
    srv.qemu_io(stdin=script)
    wall_ns = (time.monotonic() - t0) * 1e9
    assert srv.stop()[0] == 0
    report = check_log(str(srv.log))
    s = report.summary
    assert report.ok
    assert s["by_op"]["read"] == n and s["model_agreement"] == s["served"]
    # qemu-io waits for each reply: every next arrival follows one.
    assert s["idle_gap"]["count"] >= n - 1 and s["idle_gap"]["p50_ns"] > 0
    reads = report.requests[report.requests["op"] == "read"]
    # A server that replied at once could not take this long.
    assert wall_ns >= reads["service_ns"].sum()
    assert 12 < reads["service_ns"].mean() / 1e6 < 30
    assert (reads["reply_ns"] >= reads["complete_ns"]).all()
    # The command says the same, and writes what it compared.
    cmp_csv = tmp_path / "cmp.csv"
    assert main(["emu", "--check", str(srv.log), "--out", str(cmp_csv), "--json", str(tmp_path / "s.json")]) == 0
    text = capsys.readouterr().out
    assert f"model agreement: {s['served']}/{s['served']}" in text and "0 request(s) not started" in text
    assert "agree" in cmp_csv.read_text().splitlines()[0]
    # The requests as a trace that the simulator replays on the same disk.
    trace = tmp_path / "run.fiu"
    assert main(["emu", "--check", str(srv.log), "--trace", str(trace)]) == 0
    spec = tmp_path / "replay.toml"
    spec.write_text(
        '[disk]\npreset = "hp97560"\n[[scheduler]]\nname = "noop"\n'
        f'[workload]\nkind = "trace"\nformat = "fiu"\nfile = "{trace}"\n[run]\nduration_s = 60\nseed = 1\n'
    )
    out_json = tmp_path / "replay.json"
    assert main(["run", str(spec), "--json", str(out_json), "-q", "--no-plots"]) == 0
    run = json.loads(out_json.read_text())["runs"][0]
    assert run["requests"]["completed"] == n


def test_check_finds_a_log_that_disagrees_with_the_model(tmp_path, capsys):
    srv = Served(tmp_path, "--disk", "hp97560")
    srv.qemu_io("read 0 4k", "read 100M 4k", "read 1G 4k")
    srv.stop()
    lines = srv.log.read_text().splitlines()
    cols = lines[1].split(",")
    row = lines[3].split(",")
    i = cols.index("service_ns")
    row[i] = str(int(row[i]) + 1000)
    lines[3] = ",".join(row)
    srv.log.write_text("\n".join(lines) + "\n")
    assert main(["emu", "--check", str(srv.log)]) == 1
    assert "DISAGREEMENT" in capsys.readouterr().err
    assert not check_log(str(srv.log)).ok


def test_check_accepts_the_log_of_a_refused_request_past_the_last_byte(tmp_path):
    # Issue 27: a write at offset 2^64 - 100 was refused but logged with
    # nr_sectors 18410715276690587650 (the end wrapped past 2^64), and
    # `--check` then refused the emulator's own log.
    srv = Served(tmp_path, "--disk", "hp97560")
    c = NbdClient(srv.sock)
    error, _ = c.request(CMD_WRITE, 2**64 - 100, 512, b"x" * 512)
    assert error != 0
    assert c.read(4096, 4096) == bytes(4096)
    c.disconnect()
    assert srv.stop()[0] == 0
    rows = read_log(str(srv.log)).requests
    refused = rows[rows["error"] != ""]
    assert refused["nr_sectors"].tolist() == [2] and refused["sector"].tolist() == [(2**64 - 100) // 512]
    assert main(["emu", "--check", str(srv.log)]) == 0


def test_a_diskspecs_disk(tmp_path):
    srv = Served(tmp_path, "--diskspecs", str(DATA / "hp_c2247a.parv"))
    out = srv.qemu_io("read 0 4k", "write -P 9 1M 8k", "read -P 9 1M 8k")
    assert "read 8192/8192" in out
    srv.stop()
    s = check_log(str(srv.log)).summary
    assert s["model_agreement"] == s["served"] >= 3
    assert read_log(str(srv.log)).header["disk"]["diskspecs"] == str(DATA / "hp_c2247a.parv")


def test_the_native_emulator_on_a_tcp_port(tmp_path):
    from iolab._iolab import Emulator

    with Emulator(str(tmp_path / "t.img"), port=0, preset="fixed", fixed_ms=0.5) as emu:
        assert emu.address.startswith("tcp:127.0.0.1:")
        port = emu.address.rsplit(":", 1)[1]
        p = subprocess.run(["qemu-io", "-f", "raw", f"nbd://127.0.0.1:{port}", "-c", "write -P 4 0 4k",
                            "-c", "read -P 4 0 4k"], capture_output=True, text=True, timeout=60)
        assert p.returncode == 0 and "Pattern verification failed" not in p.stdout, p.stdout + p.stderr
    assert emu.wait(0), "leaving the block stopped it"
    s = json.loads(emu.stats())
    assert s["reads"] == 1 and s["writes"] == 1 and s["late"]["count"] >= 2


@pytest.mark.parametrize("args, expect", [
    (["--disk", "nope"], "unknown disk preset 'nope'"),
    (["--disk", "hp97560", "--diskspecs", "x"], "either --disk NAME or --diskspecs FILE"),
    ([], "give the disk to emulate"),
    (["--diskspecs", "/no/such.parv"], "--diskspecs /no/such.parv: no such file"),
    (["--disk", "hp97560", "--fixed-ms", "3"], "--fixed-ms is the service time of --disk fixed"),
    (["--disk", "fixed", "--fixed-ms", "-1"], "--fixed-ms -1: expected 1e-06 (1 ns) to 1e+06 ms"),
    (["--disk", "hp97560", "--port", "1", "--socket", "s"], "--socket PATH or --port N"),
    (["--disk", "hp97560", "--no-image"], "--image FILE is required"),
    (["--check", "log.csv", "--disk", "hp97560"], "--check reads a log; it takes no --disk"),
    (["--check", "missing.csv"], "--check missing.csv: no such file"),
])
def test_bad_input_is_one_line(tmp_path, capsys, monkeypatch, args, expect):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "log.csv").write_text("")
    if "--no-image" in args:
        args = [a for a in args if a != "--no-image"] + ["--socket", "s"]
    elif "--check" not in args:
        args = args + ["--image", "disk.img"] + ([] if "--port" in args else ["--socket", "s"])
    assert main(["emu", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expect in err, err
    assert not (tmp_path / "disk.img").exists(), "nothing is created on bad input"


def test_a_log_that_cannot_be_written_leaves_nothing_behind(tmp_path, capsys):
    args = ["emu", "--disk", "hp97560", "--image", str(tmp_path / "d.img"), "--socket", str(tmp_path / "s")]
    assert main([*args, "--log", str(tmp_path / "no" / "such" / "log.csv")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no/such/log.csv" in err
    assert sorted(os.listdir(tmp_path)) == [], "neither the image nor the socket is left"


def test_an_image_larger_than_the_disk_is_refused_and_kept(tmp_path, capsys):
    img = tmp_path / "big.img"
    with open(img, "wb") as f:
        f.truncate(HP_BYTES + 512)
    assert main(["emu", "--disk", "hp97560", "--image", str(img), "--socket", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"more than the disk's {HP_BYTES}" in err
    assert img.stat().st_size == HP_BYTES + 512


def test_read_log_names_what_is_wrong(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("seq,op\n1,read\n")
    with pytest.raises(ValueError, match=r"bad.csv:1: not an iolab emu log"):
        read_log(str(bad))
    bad.write_text('# iolab-emu-log 9 {}\nseq\n')
    with pytest.raises(ValueError, match="version 9"):
        read_log(str(bad))
    bad.write_text('# iolab-emu-log 1 {}\nseq,op\n')
    with pytest.raises(ValueError, match=r"bad.csv:2: expected the columns"):
        read_log(str(bad))
