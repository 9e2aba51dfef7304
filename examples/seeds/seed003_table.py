"""Seed 003's IOzone cells beside the simulation and `iolab bench`: the
table in docs/schedulers.md ("Seeds 003 and 004 in simulation").

    iolab sweep examples/seeds/seed003-iozone.toml \\
        --grid 'workload.group[0].request_kb=32,256,2048,16384' \\
        --grid 'workload.group[0].op=write,read' \\
        --grid 'workload.group[0].pattern=sequential,random' -o seed003-out
    python examples/seeds/seed003_table.py seed003-out/sweep-summary.csv

Published figures (KiB/s) are seed 003's single runs (noop, cfq, deadline,
btrfs RAID10 over four SSDs); the bench figures are the means of
docs/real-kernel.md (none, mq-deadline, kyber, bfq; a loop device on this
VM, 3 repetitions). Both are printed in MB/s (10^6 bytes), as iolab does.
"""

from __future__ import annotations

import csv
import sys

RECLEN_KB = (32, 256, 2048, 16384)
CELLS = (("write", "sequential", "write"), ("read", "sequential", "read"),
         ("read", "random", "randread"), ("write", "random", "randwrite"))

# seed 003, KiB/s: {column: {reclen: (noop, cfq, deadline)}}
SEED003 = {
    "write": {32: (77720, 76377, 76297), 256: (127308, 117518, 119929),
              2048: (164547, 164938, 160770), 16384: (196351, 189633, 191530)},
    "read": {32: (159983, 176852, 178461), 256: (476936, 477368, 435433),
             2048: (442901, 460494, 444445), 16384: (435803, 409104, 429578)},
    "randread": {32: (72330, 73787, 73916), 256: (235094, 227802, 215671),
                 2048: (360306, 353312, 363688), 16384: (438458, 392445, 440323)},
    "randwrite": {32: (70935, 71035, 69297), 256: (126306, 117237, 113361),
                  2048: (153920, 151031, 150719), 16384: (178073, 178677, 178951)},
}

# docs/real-kernel.md, iolab bench, KiB/s: (none, mq-deadline, kyber, bfq)
BENCH = {
    "write": {32: (57425, 143256, 73016, 57760), 256: (276878, 222590, 387662, 443789),
              2048: (802041, 953378, 785972, 1024589), 16384: (1120534, 1027618, 1010216, 1046808)},
    "read": {32: (24647, 51885, 44358, 45760), 256: (191518, 135961, 183897, 257033),
             2048: (538848, 439427, 516019, 677842), 16384: (734222, 752679, 780996, 899922)},
    "randread": {32: (29936, 52683, 55519, 25442), 256: (119984, 195230, 105404, 139878),
                 2048: (526918, 702924, 469705, 698277), 16384: (982399, 704579, 1068765, 800076)},
    "randwrite": {32: (105711, 90971, 55549, 57736), 256: (196880, 419174, 504181, 483572),
                  2048: (736313, 990264, 1245227, 919481), 16384: (1363142, 991874, 1120001, 1086957)},
}


def mb(kib: float) -> float:
    return kib * 1024 / 1e6


def spread(values) -> float:
    """(max - min) / mean, in %."""
    return (max(values) - min(values)) / (sum(values) / len(values)) * 100


def main(path: str) -> None:
    sim: dict[tuple[int, str, str], dict[str, float]] = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            key = (int(float(r["workload.group[0].request_kb"])), r["workload.group[0].op"],
                   r["workload.group[0].pattern"])
            sim.setdefault(key, {})[r["scheduler"]] = float(r["throughput_mb_s_mean"])
    print("| reclen | test | simulation MB/s (spread over 7 schedulers) | seed 003 MB/s noop / cfq / deadline "
          "(spread) | iolab bench MB/s none / mq-deadline / kyber / bfq (spread) |")
    print("|---|---|---|---|---|")
    for kb in RECLEN_KB:
        for op, pattern, col in CELLS:
            s = sim[(kb, op, pattern)]
            pub = [mb(v) for v in SEED003[col][kb]]
            ben = [mb(v) for v in BENCH[col][kb]]
            print(f"| {kb}k | {col} | {sum(s.values()) / len(s):.0f} ({spread(list(s.values())):.1f}%) | "
                  f"{' / '.join(f'{v:.0f}' for v in pub)} ({spread(pub):.0f}%) | "
                  f"{' / '.join(f'{v:.0f}' for v in ben)} ({spread(ben):.0f}%) |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "seed003-out/sweep-summary.csv")
