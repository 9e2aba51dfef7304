#!/usr/bin/env bash
# make test-kernel: install what is missing, build the module against the
# current Debian 6.1 image, run checkpatch, boot the image under QEMU and
# run testbed/guest/test-kernel.sh (every elevator, tunables, stress, 50
# switches under load, rmmod). Any failure, warning, oops, lockdep report
# or hung task fails it. Then a short `iolab kernel compare` on an
# emulated HP 97560 (iolab emu), end to end: guest, simulator, report.
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

# The comparison pipeline on an emulated disk: sequential readers under
# none, bfq, kyber and the two elevators, 4 s each; the report must have every row,
# and AS must have anticipated on the kernel side.
iolab=$REPO_DIR/.venv/bin/iolab
[ -x "$iolab" ] || tb_die "no $iolab: make build first (make test does)"
"$iolab" kernel compare --disks hp97560 --workloads seqreaders \
    --elevators none,bfq,kyber,anticipatory,wpcas --reps 1 --runtime 4 --overhead-us 0 \
    -o "$out/compare" >"$out/compare.txt"
"$REPO_DIR/.venv/bin/python" - "$out/compare/compare.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
assert len(rows) == 5, f"{len(rows)} rows, expected 5"
by = {r["elevator"]: r for r in rows}
for r in rows:
    assert r["kernel_mb_s"][0] > 0 and r["sim_mb_s"][0] > 0, r
    assert r["emu"].get("requests", 0) > 0, f"{r['elevator']}: the emulator log has no requests for it"
for el in ("anticipatory", "wpcas"):
    at, s, f = by[el]["kernel_antic"]
    assert at > 0 and at == s + f, f"{el}: A-T {at}, A-S {s}, A-F {f}"
PY
tb_log "compare on iolab emu: $(grep -c '^| hp97560' "$out/compare/report.md") rows"
tb_log "test-kernel passed in $(( $(date +%s) - start )) s; results in $out"
for f in "$out"/stats-stress-*.txt "$out"/stress-counts.txt; do
    [ -f "$f" ] && tb_log "$(basename "$f"): $(tr '\n' ' ' <"$f")"
done
exit 0
