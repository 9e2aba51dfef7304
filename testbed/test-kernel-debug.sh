#!/usr/bin/env bash
# make test-kernel-debug: the test-kernel job on a kernel with lockdep,
# DEBUG_ATOMIC_SLEEP, DEBUG_LIST, object debugging and KASAN
# (testbed/debug-kernel.sh builds it from the image's own linux-source; the
# first build takes tens of minutes, later runs reuse it).
#
#   testbed/test-kernel-debug.sh [OUT_DIR]     (default out/test-kernel-debug)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

out=${1:-$REPO_DIR/out/test-kernel-debug}
[ "$(id -u)" -eq 0 ] || tb_die "make test-kernel-debug needs root"
start=$(date +%s)
"$TESTBED_DIR/deps.sh"
kdir=$("$TESTBED_DIR/debug-kernel.sh")

# Build the module against the debug tree, outside kernel/ (whose
# as-iosched.ko is the one for the image's kernel).
mod=$(dirname "$kdir")/module
rm -rf "$mod"
mkdir -p "$mod"
cp "$REPO_DIR"/kernel/*.c "$REPO_DIR"/kernel/*.h "$REPO_DIR"/kernel/Makefile "$mod/"
make -s -C "$mod" KDIR="$kdir" >/dev/null
tb_log "module built against $(cat "$kdir/include/config/kernel.release")"

rm -rf "$out"
mkdir -p "$out"
disk=$(mktemp -p "${TMPDIR:-/tmp}" iolab-test-kernel.XXXXXX.img)
trap 'rm -f "$disk"' EXIT
truncate -s 1G "$disk"
# Everything the guest needs is built in: module parameters on the command
# line. KASAN and lockdep make the guest several times slower: more time.
# This small kernel has no ACPI, hence no HPET to calibrate the TSC against,
# and its PIT calibration under emulation is far off (its clock then runs
# many times too fast): give it the TSC rate, which under QEMU's TCG is the
# host's.
tsc_khz=$(awk '/^cpu MHz/ { printf "%d", $4 * 1000; exit }' /proc/cpuinfo)
"$TESTBED_DIR/run.sh" --out "$out" --disk "$disk" --timeout 3600 --mem 2048 \
    --kernel "$kdir/arch/x86/boot/bzImage" --bare --module "$mod/as-iosched.ko" \
    --append "virtio_blk.queue_depth=1 virtio_blk.num_request_queues=1 tsc_early_khz=$tsc_khz" \
    test-kernel.sh "${PER_ELEVATOR_S:-3}" "${STRESS_S:-15}"
grep -E 'Lock dependency validator|KernelAddressSanitizer' "$out/console.log" | head -2 | sed 's/^/  /' >&2 || true
tb_log "test-kernel-debug passed in $(( $(date +%s) - start )) s; results in $out"
