#!/usr/bin/env bash
# Boots the guest once and runs one job in it.
#
#   testbed/run.sh --out DIR [--disk FILE | --nbd SOCKET] [--mem MB]
#                  [--smp N] [--timeout S] [--kernel VMLINUX --bare]
#                  [--append ARGS] [--module KO] [--icount SPEC] JOB [ARGS...]
#
# JOB is a script in testbed/guest/ (e.g. test-kernel.sh). DIR becomes the
# guest's /share: the job, guest/lib.sh and the modules (every .ko of
# kernel/, or of IOLAB_KERNEL_DIR; --module KO: that one only) are copied
# there, and the guest leaves its results,
# job.log, job.rc, dmesg.txt and failures there; console.log is QEMU's.
# --kernel boots another kernel (the debug one); --bare gives it an
# initramfs without the image's modules; --append adds to its command line.
# --icount SPEC runs the guest on QEMU's instruction counter (-icount SPEC,
# e.g. shift=6,align=on,sleep=on; give --smp 1 with it): the guest's clock is
# then its instruction count, not the host's, see docs/kernel.md.
# Exit status: 0 if the job succeeded and nothing failed.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

out= disk= nbd= mem=1024 smp=2 timeout=600 kernel= bare= append= ko= icount=
while [ $# -gt 0 ]; do
    case $1 in
    --out) out=$2; shift 2 ;;
    --disk) disk=$2; shift 2 ;;
    --nbd) nbd=$2; shift 2 ;;
    --mem) mem=$2; shift 2 ;;
    --smp) smp=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --kernel) kernel=$2; shift 2 ;;
    --bare) bare=--bare; shift ;;
    --append) append=$2; shift 2 ;;
    --module) ko=$2; shift 2 ;;
    --icount) icount=$2; shift 2 ;;
    --) shift; break ;;
    -*) tb_die "unknown option $1" ;;
    *) break ;;
    esac
done
[ -n "$out" ] && [ $# -ge 1 ] || tb_die "usage: run.sh --out DIR [--disk FILE|--nbd SOCK] JOB [ARGS...]"
job=$1
shift
[ -f "$TESTBED_DIR/guest/$job" ] || tb_die "no job testbed/guest/$job"

KV=$(tb_kver)
KC=$(tb_kdir "$KV")
initrd=$("$TESTBED_DIR/build-initramfs.sh" $bare)
kernel=${kernel:-$KC/vmlinux}
kdir=${IOLAB_KERNEL_DIR:-$REPO_DIR/kernel}
if [ -n "$ko" ]; then
    kos=("$ko")
else
    kos=("$kdir"/*.ko)
fi
[ -f "${kos[0]}" ] || tb_die "build the modules first: make -C $kdir KVER=$KV"

mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out"/job.rc "$out"/job.log "$out"/dmesg.txt "$out"/failures "$out"/console.log "$out"/*.ko
cp "$TESTBED_DIR/guest/lib.sh" "$TESTBED_DIR/guest/$job" "${kos[@]}" "$out/"
{
    [ -n "${MONITOR:-}" ] && echo "MONITOR=$MONITOR"
    echo ". /share/lib.sh"
    printf 'set --'
    printf ' %q' "$@"
    echo
    echo ". /share/$job"
} >"$out/job.sh"

drive=()
if [ -n "$disk" ]; then
    drive=(-drive "file=$disk,format=raw,if=virtio,cache=unsafe")
elif [ -n "$nbd" ]; then
    drive=(-drive "file=nbd:unix:$nbd,format=raw,if=virtio")
fi

# The guest's CPUs are threads of a host that other work may starve for
# seconds (QEMU's TCG): its RCU-stall and soft-lockup reports (21 s and 20 s
# by default) then accuse no one. A minute still catches a real stall.
# The same starvation during boot can fail the IO-APIC timer check
# (arch/x86/kernel/apic/io_apic.c, check_timer: "IO-APIC + timer doesn't
# work!", a panic); no_timer_check skips it, as virtualised guests do.
watchdogs="rcupdate.rcu_cpu_stall_timeout=60 watchdog_thresh=30 no_timer_check"
# Starvation during boot also spoils the TSC calibration: the guest measures
# its TSC against the emulated PIT and, when the two disagree with HPET,
# may trust the PIT (seen here: 683 MHz detected on a 2,596 MHz host, so
# the guest's clock ran 3.8 times too fast, and every time-based figure of
# that boot was wrong). Under TCG the guest's TSC runs at the host's rate:
# give it (arch/x86/kernel/tsc.c, tsc_early_khz), and check it below.
host_khz=$(awk '/^cpu MHz/ { printf "%d", $4 * 1000; exit }' /proc/cpuinfo)
accel=(-accel tcg)
prio=()
if [ -n "$icount" ]; then
    # Under -icount the guest's TSC is QEMU's virtual clock in ns
    # (cpu_get_ticks returns icount_get), a 1 GHz TSC whatever the host's.
    accel+=(-icount "$icount")
    host_khz=1000000
    # The guest's clock stays the host's only while QEMU runs the guest's
    # instructions at least as fast as the clock counts them; a busy host
    # (load 6 on 2 cores) made it fall seconds behind. At nice -10 QEMU
    # gets ~9 times the CPU share of a nice-0 task (CFS weights 9548 : 1024).
    prio=(nice -n "${IOLAB_GUEST_NICE:--10}")
fi
case "$append" in *tsc_early_khz=*) ;; *) [ -n "$host_khz" ] && append="tsc_early_khz=$host_khz $append" ;; esac
tb_log "booting $KV: $job $* (out: $out)"
set +e
timeout --foreground -k 10 "$timeout" "${prio[@]}" qemu-system-x86_64 "${accel[@]}" -m "$mem" -smp "$smp" \
    -nographic -no-reboot -kernel "$kernel" -initrd "$initrd" \
    -append "console=ttyS0 panic=-1 loglevel=7 tsc=reliable clocksource=tsc $watchdogs $append" \
    -virtfs "local,path=$out,mount_tag=share,security_model=none,id=share" \
    -virtfs "local,path=$KC/fio,mount_tag=tools,security_model=none,id=tools,readonly=on" \
    "${drive[@]}" </dev/null >"$out/console.log" 2>&1
qrc=$?
set -e

status=0
if [ $qrc -eq 124 ] || [ $qrc -eq 137 ]; then
    echo "guest timed out after ${timeout}s" >>"$out/failures"
fi
if [ ! -f "$out/job.rc" ]; then
    echo "the guest did not finish its job (qemu exit $qrc); see console.log" >>"$out/failures"
elif [ "$(cat "$out/job.rc")" != 0 ]; then
    echo "job exited with $(cat "$out/job.rc"); see job.log" >>"$out/failures"
fi
# A guest whose clock runs at the wrong rate measured nothing: its TSC
# must be the host's within 1%.
guest_mhz=$(sed -n 's/.*tsc: Detected \([0-9.]*\) MHz processor.*/\1/p' "$out/console.log" | head -1)
if [ -n "$guest_mhz" ] && [ -n "$host_khz" ] &&
    ! awk -v g="$guest_mhz" -v h="$host_khz" 'BEGIN { d = g * 1000 / h - 1; exit !(d < 0.01 && d > -0.01) }'; then
    echo "the guest's TSC is ${guest_mhz} MHz, expected $((host_khz / 1000)) MHz: its clock ran at the wrong rate" >>"$out/failures"
fi
# The console catches what dmesg.txt cannot (a hang, a panic).
bad='Kernel panic|BUG:|WARNING:|Oops|Call Trace|possible circular locking|inconsistent lock state|possible recursive locking|suspicious RCU usage|lockdep is turned off|blocked for more than|detected stalls|KASAN|UBSAN'
if grep -aE "$bad" "$out/console.log" >/dev/null; then
    echo "console: $(grep -aE "$bad" "$out/console.log" | head -2 | tr '\n' '|')" >>"$out/failures"
fi
if [ -s "$out/failures" ]; then
    tb_log "FAILED: $job"
    sed 's/^/  /' "$out/failures" >&2
    status=1
else
    tb_log "passed: $job"
fi
exit $status
