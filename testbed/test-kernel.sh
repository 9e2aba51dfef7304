#!/usr/bin/env bash
# make test-kernel: install what is missing, build the module against the
# current Debian 6.1 image, run checkpatch, boot the image under QEMU and
# run testbed/guest/test-kernel.sh (every elevator, tunables, stress, 50
# switches under load, rmmod). Any failure, warning, oops, lockdep report
# or hung task fails it.
#
#   testbed/test-kernel.sh [OUT_DIR]     (default out/test-kernel)
# Environment: PER_ELEVATOR_S (3), STRESS_S (15), MONITOR (seconds; off).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

out=${1:-$REPO_DIR/out/test-kernel}
[ "$(id -u)" -eq 0 ] || tb_die "make test-kernel needs root (apt installs, QEMU's 9p shares)"
start=$(date +%s)

"$TESTBED_DIR/deps.sh"
KV=$(tb_kver)
tb_log "building the module for $KV"
make -s -C "$REPO_DIR/kernel" KVER="$KV" >/dev/null
tb_log "checkpatch"
make -s -C "$REPO_DIR/kernel" KVER="$KV" checkpatch

rm -rf "$out"
mkdir -p "$out"
disk=$(mktemp -p "${TMPDIR:-/tmp}" iolab-test-kernel.XXXXXX.img)
trap 'rm -f "$disk"' EXIT
truncate -s 1G "$disk"
"$TESTBED_DIR/run.sh" --out "$out" --disk "$disk" --timeout 1200 \
    test-kernel.sh "${PER_ELEVATOR_S:-3}" "${STRESS_S:-15}"
tb_log "test-kernel passed in $(( $(date +%s) - start )) s; results in $out"
for f in "$out"/stats-stress-*.txt "$out"/stress-counts.txt; do
    [ -f "$f" ] && tb_log "$(basename "$f"): $(tr '\n' ' ' <"$f")"
done
exit 0
