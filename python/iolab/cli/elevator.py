"""`iolab elevator new NAME`: a researcher's own elevator, written once in C
for the simulator and the kernel (docs/elevator-howto.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

DESCRIPTION = """\
Write kernel/NAME-iosched.c, a first-come-first-served elevator over Linux
6.1's elevator_mq_ops with every hook documented, and its line in
kernel/Makefile. Edit its NAME_choose() (and whatever else) into your own
policy. The same file is:

  the simulator's kernel:NAME   iolab compare --schedulers kernel:NAME ...
                                (compiled at first use, and again after
                                each edit: no rebuild of iolab needed)
  a Linux 6.1 elevator          make -C kernel; insmod kernel/NAME-iosched.ko
                                iolab kernel compare --elevators NAME ...

A name that is not a C identifier, one of an elevator that exists, or a
file that exists is refused; nothing is ever overwritten.
"""

EPILOG = """\
example:
  iolab elevator new sstf
  iolab compare --workload iozone-random --schedulers noop,kernel:sstf,as
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("elevator", help="write your own elevator in C, once, for the simulator and the kernel",
                       description=DESCRIPTION, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    sp = p.add_subparsers(dest="elevator_command", metavar="COMMAND")
    sp.required = True
    n = sp.add_parser("new", help="write kernel/NAME-iosched.c from the template, and its Makefile line",
                      description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    n.add_argument("name", metavar="NAME", help="the elevator's name (a C identifier, at most 15 characters)")
    n.add_argument("--kernel-dir", metavar="DIR",
                   help="where the module's sources are (default: kernel/ of the iolab checkout)")
    n.set_defaults(func=run_new)


def run_new(args) -> int:
    from iolab.elevator import new
    from iolab.kernel import testbed

    kdir = Path(args.kernel_dir) if args.kernel_dir else testbed.find_repo() / "kernel"
    w = new(args.name, kdir)
    name = args.name
    sim_env = "" if not args.kernel_dir else f"IOLAB_KERNEL_DIR={kdir} "
    print(f"wrote {w.source}")
    print(f"added '{w.line}' to {w.makefile}")
    print()
    print("next:")
    print(f"  1. edit {w.source.name}: {name}_choose() picks the request to serve (the template serves the oldest)")
    print(f"  2. simulate: {sim_env}iolab compare --workload iozone-random --schedulers noop,kernel:{name}")
    print("     (the simulator compiles it at first use, and again after each edit: no rebuild of iolab)")
    print(f"  3. the module: make -C {kdir}   ({name}-iosched.ko; needs the kernel's headers)")
    print(f"  4. in Linux 6.1: sudo iolab kernel compare --elevators mq-deadline,{name}   (a QEMU guest)")
    return 0
