#!/bin/bash
# The simulator's results over every scheduler and every workload kind, as
# JSON files in OUTDIR, for checking that a change meant to be a speed-up
# changes no result (the simulator is deterministic: two builds that agree
# give byte-identical files). See docs/bench.md ("Where the time goes").
#
#   scripts/sim_outputs.sh before/    # on the old build
#   scripts/sim_outputs.sh after/     # on the new one (after `make build`)
#   diff -r before/ after/ && echo identical
#
# About a minute on 2 cores; IOLAB=... to use another `iolab`.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
IOLAB=${IOLAB:-$ROOT/.venv/bin/iolab}
OUT=${1:?usage: scripts/sim_outputs.sh OUTDIR}
mkdir -p "$OUT/specs"
S=noop,deadline,cfq,as,as95,wpcas,none,mq-deadline,kyber,bfq
for w in iozone iozone-random deceptive-idleness postmark postmark-web web; do
  "$IOLAB" compare --workload $w --schedulers $S --seeds 2 --duration 20 --json "$OUT/cmp-$w.json" -q -j 2 >/dev/null
done
"$IOLAB" compare --disk ssd --workload iozone-random --schedulers none,mq-deadline,kyber,bfq,noop \
  --set disk.queue_depth=32 --seeds 2 --duration 2 --json "$OUT/ssd.json" -q -j 2 >/dev/null
"$IOLAB" compare --disk modern7200 --workload web --schedulers $S --set disk.queue_depth=8 \
  --set disk.device_order=sptf --seeds 1 --duration 20 --json "$OUT/m7200.json" -q -j 2 >/dev/null
# Trace replay: every format, open and closed.
for f in blkparse:sample.blkparse.txt msr:sample.msr.csv spc:sample.spc.csv fiu:sample.fiu.txt disksim:sample.disksim.ascii; do
  for mode in open closed; do
    cat > "$OUT/specs/trace-${f%%:*}-$mode.toml" <<SPEC
name = "trace ${f%%:*} $mode"
[disk]
preset = "hp97560"
[[scheduler]]
name = "noop"
[[scheduler]]
name = "as"
[[scheduler]]
name = "wpcas"
[[scheduler]]
name = "cfq"
[[scheduler]]
name = "bfq"
[[scheduler]]
name = "kyber"
[workload]
kind = "trace"
file = "$ROOT/data/traces/${f#*:}"
format = "${f%%:*}"
mode = "$mode"
fit = "wrap"
jitter_ms = 1
[run]
duration_s = 60
seed = 1
repetitions = 2
SPEC
  done
done
for f in "$ROOT"/examples/*.toml "$ROOT"/examples/seeds/*.toml "$OUT"/specs/*.toml; do
  "$IOLAB" run "$f" --set run.duration_s=20 --json "$OUT/run-$(basename "$f" .toml).json" -q -j 2 >/dev/null
done
"$IOLAB" validate --all "$ROOT/data/disksim" --json "$OUT/validate.json" >/dev/null
echo "$(ls "$OUT"/*.json | wc -l) result files in $OUT"
