"""Write the synthetic sample traces of this folder (run: python3 make_samples.py).

Every file holds the same 48 made-up requests in one format: process 1201
reads sequentially (8 sectors, 1-3 ms apart) from sector 100000, process
1202 writes 16 sectors at random places below sector 2,000,000 about every
10 ms. Nothing here was measured on a real system.
"""

import random

rng = random.Random(2024)
reqs = []  # (time_ns, pid, sector, nr_sectors, is_read)
t, sector = 1_000_000, 100_000
for _ in range(24):
    reqs.append((t, 1201, sector, 8, True))
    sector += 8
    t += rng.randint(1_000_000, 3_000_000)
t = 3_500_000
for _ in range(24):
    reqs.append((t, 1202, rng.randrange(0, 2_000_000, 8), 16, False))
    t += rng.randint(8_000_000, 12_000_000)
reqs.sort()
NAMES = {1201: "reader", 1202: "writer"}
SYNTH = "# synthetic sample trace written by make_samples.py; not measured\n"


def blkparse():
    lines, seq = [], 0
    for time_ns, pid, sec, n, rd in reqs:
        rw = "R" if rd else "W"
        for action, dt in (("Q", 0), ("D", 20_000), ("C", 6_000_000)):
            seq += 1
            ts = time_ns + dt
            who = NAMES[pid] if action != "C" else "0"
            lines.append(f"  8,0    0 {seq:8d} {ts // 10**9:5d}.{ts % 10**9:09d} {pid:5d}  {action}  {rw:>2} {sec} + {n} [{who}]")
    lines.append("CPU0 (8,0):")
    lines.append(" Reads Queued:          24,       96KiB\t Writes Queued:          24,      192KiB")
    return "\n".join(lines) + "\n"


def msr():
    base = 128166372000000000  # a Windows filetime (100 ns units)
    return "".join(
        f"{base + time_ns // 100},synth,{0 if pid == 1201 else 1},{'Read' if rd else 'Write'},{sec * 512},{n * 512},{rng.randint(20000, 90000)}\n"
        for time_ns, pid, sec, n, rd in reqs
    )


def spc():
    return "".join(
        f"{0 if pid == 1201 else 1},{sec},{n * 512},{'r' if rd else 'w'},{time_ns / 1e9:.6f}\n"
        for time_ns, pid, sec, n, rd in reqs
    )


def fiu():
    return "".join(
        f"{89566814440625 + time_ns} {pid} {NAMES[pid]} {sec} {n} {'R' if rd else 'W'} 8 0 {rng.getrandbits(128):032x}\n"
        for time_ns, pid, sec, n, rd in reqs
    )


def disksim():
    return "".join(
        f"{time_ns / 1e6:.6f} {0 if pid == 1201 else 1} {sec} {n} {1 if rd else 0}\n"
        for time_ns, pid, sec, n, rd in reqs
    )


for name, text, comment in [
    ("sample.blkparse.txt", blkparse(), False),
    ("sample.msr.csv", msr(), False),
    ("sample.spc.csv", spc(), False),
    ("sample.fiu.txt", fiu(), True),
    ("sample.disksim.ascii", disksim(), True),
]:
    with open(name, "w") as f:
        f.write((SYNTH if comment else "") + text)
