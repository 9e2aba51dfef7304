"""Synthetic guest boots for the tests: an emulator log (``emu.csv``) of
marker-bracketed runs, the plan and ``disk.conf``, and blk tracer files for
traced runs, as `iolab kernel compare`'s calibration boots leave them."""

COLS = ("seq,conn,op,flags,offset,length,sector,nr_sectors,arrival_ns,start_ns,complete_ns,reply_ns,"
        "service_ns,seek_ns,rotation_ns,transfer_ns,overhead_ns,seek_cylinders,cache,error")
CAP = 10_000
MARK = CAP - 2048


def calibration_boot(d, runs, mark=MARK, stretch=None):
    """A calibration boot: ``runs`` is a list of (workload, elevator, disk
    gaps in ns, guest C->Q gaps in µs or None); a run with guest gaps has a
    trace file, as a traced copy has."""
    d.mkdir()
    (d / "runs").mkdir()
    rows = []

    def rq(sector, arrival):
        rows.append(f"{len(rows)},1,read,,{sector * 512},4096,{sector},8,{arrival},{arrival},"
                    f"{arrival + 1_000},{arrival + 1_000},1000,0,0,0,0,0,miss,")
        return arrival + 1_000

    t, stamps = 0, []
    for rid, (_, _, gaps, guest_gaps) in enumerate(runs):
        t = rq(mark + 16 * rid, t + 1_000)
        begin = t
        for g in gaps:
            t = rq(100, t + g)
        t = rq(mark + 16 * rid + 8, t + 1_000)
        if stretch is not None:
            # the guest's clock after each marker's reply; ``stretch``: {run: guest/disk length}
            stamps += [f"{2 * rid} {begin}", f"{2 * rid + 1} {begin + round((t - begin) * stretch.get(rid, 1.0))}"]
        if guest_gaps is not None:
            lines, now = [], 10.0
            for g in guest_gaps:
                lines.append(f"         fio-127      [000] d.h2.   {now:.6f}: 254,0    C  RS 100 + 8 [0]")
                now += g / 1e6
                lines.append(f"         fio-127      [000] d..1.   {now:.6f}: 254,0    Q  RS 108 + 8 [fio]")
                now += 0.000300
                lines.append(f"    kworker/0:1H-39      [000] d..1.   {now:.6f}: 254,0    D  RS 108 + 8 [kw]")
                now += 0.001
            (d / "runs" / f"{rid}.trace").write_text("\n".join(lines) + "\n")
    (d / "emu.csv").write_text("# iolab-emu-log 1 {}\n" + COLS + "\n" + "\n".join(rows) + "\n")
    (d / "plan.txt").write_text("".join(f"{i} {wl} {el}\n" for i, (wl, el, _, _) in enumerate(runs)))
    (d / "disk.conf").write_text(f"marker_sector {mark}\n")
    if stamps:
        (d / "runs" / "clock.txt").write_text("\n".join(stamps) + "\n")
