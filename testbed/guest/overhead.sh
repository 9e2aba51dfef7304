# CPU cost per request of each elevator on a fast disk (null_blk: no data,
# completions in the submitting context), all in one boot. For each
# repetition the elevators run in a rotated order; each run records the
# guest's busy CPU time (/proc/stat) and the requests the device completed
# (/sys/block/DEV/stat), so cost per request = busy time / requests.
#
# Arguments: SECONDS per run (default 5), REPETITIONS (default 5),
# ELEVATORS (default "none mq-deadline bfq anticipatory wpcas").
secs=${1:-5}
reps=${2:-5}
elevators=${3:-none mq-deadline bfq anticipatory wpcas}
dev=nullb0

load configfs
# One submission queue, a deep device, no data, immediate completion.
load null_blk nr_devices=1 queue_mode=2 submit_queues=1 hw_queue_depth=64 \
    irqmode=0 completion_nsec=0 memory_backed=0 gb=4 bs=4096
load bfq
load_ours
[ -b /dev/$dev ] || { fail "no /dev/$dev"; return 1; }
mkdir -p /share/overhead
echo "rep elevator busy_ns requests" >/share/overhead/runs.txt

busy_ns() { # user+nice+system+irq+softirq+steal of all CPUs, in ns
    awk -v hz="$(getconf CLK_TCK 2>/dev/null || echo 100)" '$1 == "cpu" {
        printf "%.0f\n", ($2 + $3 + $4 + $7 + $8 + $9) * 1e9 / hz }' /proc/stat
}
done_ios() { awk '{ print $1 + $5 }' /sys/block/$dev/stat; }

rep=1
while [ $rep -le "$reps" ]; do
    # rotate the order each repetition
    order=$(echo $elevators | awk -v r=$rep '{ for (i = 0; i < NF; i++) printf "%s ", $((i + r - 1) % NF + 1) }')
    for s in $order; do
        set_sched $dev "$s" 128 || continue
        # Measure a window inside the run: fio's start and end (process
        # creation, 9p reads of its libraries) are no elevator cost.
        # fio runs until the window is over and is then stopped: a guest
        # on the instruction counter starts its ten jobs so slowly that a
        # fixed runtime ended inside the window (0 requests in it).
        fio_bg --output-format=json --output="/share/overhead/$rep-$s.json" \
            --filename=/dev/$dev --runtime=$((secs + 600)) --time_based --group_reporting=1 \
            --invalidate=0 \
            --name=sync --rw=randread --bs=4k --direct=1 --ioengine=psync --numjobs=8 \
            --name=deep --rw=randread --bs=4k --direct=1 --ioengine=libaio --iodepth=16 \
                --numjobs=2 >/dev/null
        # wait until I/O flows, then one more second
        n=0 a=$(done_ios)
        while [ $(( $(done_ios) - a )) -lt 1000 ] && [ $n -lt 120 ]; do
            sleep 0.5
            n=$((n + 1))
        done
        sleep 1
        b0=$(busy_ns)
        i0=$(done_ios)
        sleep "$secs"
        b1=$(busy_ns)
        i1=$(done_ios)
        if kill -0 "$FIO_PID" 2>/dev/null; then
            kill -INT "$FIO_PID"
            wait "$FIO_PID"
            wait_no_fio 120
        else
            wait "$FIO_PID" || fail "fio under $s"
            fail "rep $rep $s: fio ended inside the measuring window"
        fi
        echo "$rep $s $((b1 - b0)) $((i1 - i0))" >>/share/overhead/runs.txt
        case $s in anticipatory|wpcas) stats_of $dev >"/share/overhead/$rep-$s.stats" ;; esac
        log "rep $rep $s: $((i1 - i0)) requests, $(( (b1 - b0) / (i1 - i0 + 1) )) ns busy each"
    done
    rep=$((rep + 1))
done
check_dmesg
