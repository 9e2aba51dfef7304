#!/bin/sh
# The read goal of issue 11 (part 5), reproducible: reading back 64 KiB
# messages, FastQueue against the file-per-message baseline, warm and cold,
# each case run with each read API of $APIS back to back (default
# "batch,mapped"; "vec": a fresh Vec per message, the API before
# MessageBatch; "batch": dequeue_batch_into one reused MessageBatch, given
# to the baseline too; "mapped": FastQueue's dequeue_batch_mapped, payloads
# borrowed from the segments' mappings, against the baseline's best read,
# the batch), REPS rounds; fio's reads of the same device in the same run
# bound the cold rows. Then the read path alone (examples/read_cost.rs):
# time, CPU and page faults per message.
#
#   flock /work/wt/bench.lock crates/fastqueue/scripts/read-goal.sh DIR [REPS] > out.txt
#   (APIS=vec,batch,mapped for all three; RC_COUNT, RC_REPS: read_cost's messages and rounds)
#
# Build first: cargo build --release -p fastqueue --features cli --bin fastqueue-bench
#              cargo build --release -p fastqueue --features bench --example read_cost
set -eu
dir=${1:?usage: read-goal.sh DIR [REPS]}
reps=${2:-3}
apis=${APIS:-batch,mapped}
top=$(cd "$(dirname "$0")/../../.." && pwd)
bin=$top/target/release
mkdir -p "$dir"
stamp() { echo "== $1: $(date -u '+%F %T') UTC, $(uptime | sed 's/.*load/load/'), $(grep -c ^processor /proc/cpuinfo) CPUs"; }
mount_of() { df -P "$dir" | awk 'NR == 2 { print $1 }' | xargs -I{} sh -c "grep '^{} ' /proc/mounts | head -1"; }
echo "# read-goal.sh at $(git -C "$top" rev-parse --short HEAD) in $dir; file system: $(mount_of)"

fio_read() {
    # $1 name, then fio options; the file is written once, then read with
    # its cached pages dropped first (fio's invalidate=1, the default).
    name=$1
    shift
    fio --name="$name" --filename="$dir/fio.bin" --size=1G --rw=read --output-format=json "$@" 2>/dev/null |
        python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]["read"]; print("fio read %-15s %5.0f MB/s  (%s)" % (sys.argv[1], j["bw_bytes"]/1e6, sys.argv[2]))' "$name" "$*"
}
fio_all() {
    stamp "fio reads"
    fio --name=fill --filename="$dir/fio.bin" --size=1G --rw=write --bs=1M --end_fsync=1 --output-format=json >/dev/null
    fio_read direct-1M-x16 --bs=1M --direct=1 --ioengine=libaio --iodepth=16
    fio_read buffered-1M --bs=1M --ioengine=psync
    fio_read buffered-64K --bs=64k --ioengine=psync
    rm -f "$dir/fio.bin"
}

fio_all
stamp "fastqueue-bench start"
"$bin/fastqueue-bench" --dir "$dir/bench" --peers fastqueue,file-per-message --sizes 65536 \
    --producers 1,4,16,64 --read-api "$apis" --reps "$reps"
stamp "fastqueue-bench end"
fio_all
stamp "read_cost start"
APIS=$apis "$bin/examples/read_cost" "$dir/rc" "${RC_COUNT:-4096}" 65536 "${RC_REPS:-2}"
stamp "read_cost end"
