"""The extracted disk as a DiskSim 4.0 run file (``NAME.parv``): the disk
block behind a passthrough controller and a bus that carries the measured
time per block, the topology DiskSim's own validation runs use (driver,
bus, controller, bus, disk). ``iolab validate --diskspecs NAME.parv`` and
``[disk] diskspecs = "NAME.parv"`` load it; DiskSim itself needs the
``statdefs`` file of its distribution beside it (data/disksim/ has one).
"""

from __future__ import annotations

# DiskSim 4.0's statistics blocks: every print switch a run file must give
# (the names are DiskSim's parameters; which are on is our choice).
_STATS = {
    "iodriver stats = disksim_iodriver_stats": [
        "Print driver size stats", "Print driver locality stats", "Print driver blocking stats",
        "Print driver interference stats", "Print driver queue stats", "Print driver crit stats",
        "Print driver idle stats", "Print driver intarr stats", "Print driver streak stats",
        "Print driver stamp stats", "Print driver per-device stats"],
    "bus stats = disksim_bus_stats": ["Print bus idle stats", "Print bus arbwait stats"],
    "ctlr stats = disksim_ctlr_stats": [
        "Print controller cache stats", "Print controller size stats", "Print controller locality stats",
        "Print controller blocking stats", "Print controller interference stats",
        "Print controller queue stats", "Print controller crit stats", "Print controller idle stats",
        "Print controller intarr stats", "Print controller streak stats", "Print controller stamp stats",
        "Print controller per-device stats"],
    "device stats = disksim_device_stats": [
        "Print device queue stats", "Print device crit stats", "Print device idle stats",
        "Print device intarr stats", "Print device size stats", "Print device seek stats",
        "Print device latency stats", "Print device xfer stats", "Print device acctime stats",
        "Print device interfere stats", "Print device buffer stats"],
    "process flow stats = disksim_pf_stats": [
        "Print per-process stats", "Print per-CPU stats", "Print all interrupt stats", "Print sleep stats"],
}


def _stats() -> str:
    parts = []
    for head, keys in _STATS.items():
        parts.append(f"{head} {{\n" + ",\n".join(f"   {k} = 1" for k in keys) + "\n}")
    return "disksim_stats Stats {\n" + ",\n".join(parts) + "\n} # end of stats block\n"


def _bus(name: str, block_ms: float) -> str:
    return (f"disksim_bus {name} {{\n"
            "   type = 1,\n"
            "   Arbitration type = 1,\n"
            "   Arbitration time = 0.0,\n"
            f"   Read block transfer time = {block_ms:.6f},\n"
            f"   Write block transfer time = {block_ms:.6f},\n"
            "   Print stats = 1\n"
            f"}} # end of {name}\n")


def text(stem: str, head: str, disk_block: str, bus_ms: float, sectors: int) -> str:
    """The run file for the disk ``disk_block`` (a ``disksim_disk`` named
    ``stem``) on a bus of ``bus_ms`` per block (the write time is taken
    equal to the read's: writes are not measured)."""
    return (
        f"# {stem}: {head}\n"
        "# the disk on a bus carrying the measured time per block; writes take the read's\n"
        "disksim_global Global {\n"
        "   Init Seed = 42,\n"
        "   Real Seed = 42,\n"
        "   Stat definition file = statdefs\n"
        "}\n\n"
        + _stats() + "\n"
        "disksim_iodriver DRIVER0 {\n"
        "   type = 1,\n"
        "   Constant access time = 0.0,\n"
        "   Scheduler = disksim_ioqueue {\n"
        "      Scheduling policy = 1,\n"
        "      Cylinder mapping strategy = 1,\n"
        "      Write initiation delay = 0.0,\n"
        "      Read initiation delay = 0.0,\n"
        "      Sequential stream scheme = 0,\n"
        "      Maximum concat size = 128,\n"
        "      Overlapping request scheme = 0,\n"
        "      Sequential stream diff maximum = 0,\n"
        "      Scheduling timeout scheme = 0,\n"
        "      Timeout time/weight = 6,\n"
        "      Timeout scheduling = 4,\n"
        "      Scheduling priority scheme = 0,\n"
        "      Priority scheduling = 4\n"
        "   },\n"
        "   Use queueing in subsystem = 1\n"
        "} # end of DRIVER0\n\n"
        + _bus("BUS0", 0.0) + "\n" + _bus("BUS1", bus_ms) + "\n"
        "disksim_ctlr CTLR0 {\n"
        "   type = 1,\n"
        "   Scale for delays = 0.0,\n"
        "   Bulk sector transfer time = 0.0,\n"
        "   Maximum queue length = 0,\n"
        "   Print stats = 1\n"
        "} # end of CTLR0\n\n"
        + disk_block + "\n"
        "instantiate [ statfoo ] as Stats\n"
        "instantiate [ bus0 ] as BUS0\n"
        "instantiate [ bus1 ] as BUS1\n"
        f"instantiate [ disk0 ] as {stem}\n"
        "instantiate [ driver0 ] as DRIVER0\n"
        "instantiate [ ctlr0 ] as CTLR0\n\n"
        "topology disksim_iodriver driver0 [\n"
        "   disksim_bus bus0 [\n"
        "      disksim_ctlr ctlr0 [\n"
        "         disksim_bus bus1 [\n"
        "            disksim_disk disk0 []\n"
        "         ]\n"
        "      ]\n"
        "   ]\n"
        "]\n\n"
        "disksim_logorg org0 {\n"
        "   Addressing mode = Parts,\n"
        "   Distribution scheme = Asis,\n"
        "   Redundancy scheme = Noredun,\n"
        "   devices = [ disk0 ],\n"
        f"   Stripe unit = {sectors},\n"
        "   Synch writes for safety = 0,\n"
        "   Number of copies = 2,\n"
        "   Copy choice on read = 6,\n"
        "   RMW vs. reconstruct = 0.5,\n"
        "   Parity stripe unit = 64,\n"
        "   Parity rotation type = 1,\n"
        "   Time stamp interval = 0.000000,\n"
        "   Time stamp start time = 60000.000000,\n"
        "   Time stamp stop time = 10000000000.000000,\n"
        "   Time stamp file name = stamps\n"
        "} # end of org0\n\n"
        "disksim_pf Proc {\n"
        "   Number of processors = 1,\n"
        "   Process-Flow Time Scale = 1.0\n"
        "} # end of Proc\n"
    )
