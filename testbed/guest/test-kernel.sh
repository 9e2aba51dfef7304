# make test-kernel, inside the guest: the module next to bfq and kyber,
# every elevator for a few seconds, the tunables, a stress phase, and
# removing the module. Any failure is written to /share/failures.
#
# Arguments: SECONDS per elevator (default 3), STRESS seconds (default 20),
# PHASES to run (default all: "round tunables depth dontprep stress switch
# rmmod").
per=${1:-3}
stress=${2:-20}
phases=" ${3:-round tunables depth dontprep stress switch rmmod} "
phase() { case $phases in *" $1 "*) return 0 ;; esac; return 1; }
dev=vda
ELEVATORS="none mq-deadline kyber bfq anticipatory wpcas"
ours() { [ "$1" = anticipatory ] || [ "$1" = wpcas ]; }
mkdir -p /share/fio
watchdogs_on

log "kernel $(uname -r); loading virtio_blk (one request at a time), bfq, kyber, kernel/'s modules"
load virtio_blk queue_depth=1 num_request_queues=1
load bfq
load kyber-iosched
load_ours
avail=$(cat /sys/block/$dev/queue/scheduler)
[ -n "${MONITOR:-}" ] && monitor_start $dev "$MONITOR"
log "schedulers: $avail"
for s in $ELEVATORS; do
    echo " $avail " | tr -d '[]' | grep -q " $s " || fail "$s not offered"
done

# ---- 1. every elevator: a short mixed run, counters at rest ----
# Every one offered: kernel/'s sstf and a scaffolded elevator too.
phase round && for s in $(echo "$avail" | tr -d '[]'); do
    set_sched $dev "$s" || continue
    fio --output-format=json --output="/share/fio/round-$s.json" \
        --filename=/dev/$dev --runtime="$per" --time_based --group_reporting=0 \
        --name=seq --rw=read --direct=1 --bs=16k --numjobs=2 --thinktime=1ms \
            --offset_increment=128m --size=64m \
        --name=rand --rw=randread --direct=1 --bs=4k --size=512m \
        --name=write --rw=write --direct=0 --bs=64k --offset=768m --size=64m \
        >/dev/null || fail "fio under $s"
    sync
    sleep 1
    if ours "$s"; then
        check_stats $dev "round $s" rest
        stats_of $dev >"/share/stats-round-$s.txt"
        [ "$(stat_val "$(stats_of $dev)" dispatched)" -gt 0 ] || fail "$s dispatched nothing"
    fi
    log "$s: done"
done

# ---- 2. tunables: read back what is written; bad input refused ----
if phase tunables; then
set_sched $dev wpcas
q=/sys/block/$dev/queue/iosched
tun() { # name value expect
    echo "$2" >"$q/$1" 2>/dev/null || { fail "writing $2 to $1 refused"; return; }
    [ "$(cat "$q/$1")" = "$3" ] || fail "$1: wrote $2, reads $(cat "$q/$1"), expected $3"
}
[ "$(cat $q/antic_expire)" = 6 ] || fail "antic_expire default $(cat $q/antic_expire) != 6"
[ "$(cat $q/read_expire)" = 125 ] || fail "read_expire default $(cat $q/read_expire) != 125"
[ "$(cat $q/gamma)" = 0.500 ] || fail "gamma default $(cat $q/gamma) != 0.500"
[ "$(cat $q/seek_cyl_sectors)" = 1368 ] || fail "seek_cyl_sectors default $(cat $q/seek_cyl_sectors)"
tun antic_expire 10 10
tun antic_expire 100000 600
tun read_batch_expire 250 250
tun hist_len 64 64
tun hist_len 100000 256
tun gamma 0.75 0.750
tun gamma 1 1.000
tun window_ms 0 1
tun max_wait_ms 15 15
[ "$(cat $q/merge_by_class)" = 0 ] || fail "merge_by_class default $(cat $q/merge_by_class) != 0 (2.6.20's)"
tun merge_by_class 1 1
tun merge_by_class 7 1
if (echo abc >"$q/antic_expire") 2>/dev/null; then fail "antic_expire took 'abc'"; fi
if (echo 0.5x >"$q/gamma") 2>/dev/null; then fail "gamma took '0.5x'"; fi
if (echo 5 >"$q/antic_started") 2>/dev/null; then fail "antic_started is writable"; fi
fi

# ---- 3. the defects only a real kernel shows (issue 23), fixed ----
# limit_depth at the default nr_requests (2): the awaited reader keeps a
# scheduler tag; scsi_debug retries (RQF_DONTPREP requeues) do not stall.
if phase depth; then
    log "limit_depth at the default nr_requests: buffered writer and a reader"
    CHECK=1 depth_check $dev 8 | while read -r line; do log "depth: $line"; done
fi
if phase dontprep; then
    log "scsi_debug retries (RQF_DONTPREP requeues) under a writer and a reader"
    CHECK=1 dontprep_check 8 | while read -r line; do log "dontprep: $line"; done
fi

# ---- 4. stress ----
# 64 processes: sync sequential readers with think time, sync random
# readers, sync (O_DIRECT) writers and async (buffered) writers, in the
# three I/O priority classes; short-lived readers that exit while they are
# anticipated; 50 scheduler switches under load.
# Background helpers wait for their own children only: a bare `wait`
# would also wait for the stress load running beside them.
short_lived() { # count: processes that read once and exit
    local i=0 pids=
    while [ $i -lt "$1" ]; do
        dd if=/dev/$dev of=/dev/null bs=4k count=1 iflag=direct \
            skip=$((RANDOM * 8)) 2>/dev/null &
        pids="$pids $!"
        i=$((i + 1))
        if [ $((i % 8)) -eq 0 ]; then
            wait $pids
            pids=
        fi
    done
    [ -z "$pids" ] || wait $pids
}
ioniced() { # readers under each ionice class
    local pids=
    ionice -c 1 -n 0 dd if=/dev/$dev of=/dev/null bs=64k count=200 iflag=direct skip=4000 2>/dev/null &
    pids="$pids $!"
    ionice -c 2 -n 7 dd if=/dev/$dev of=/dev/null bs=64k count=200 iflag=direct skip=6000 2>/dev/null &
    pids="$pids $!"
    ionice -c 3 dd if=/dev/$dev of=/dev/null bs=64k count=100 iflag=direct skip=8000 2>/dev/null &
    pids="$pids $!"
    wait $pids
}
# The stress load in the background (FIO_PID): 64 processes.
stress_fio() { # seconds output [extra fio options]
    local secs=$1 out=$2
    shift 2
    # invalidate=0: no BLKFLSBUF at job start, which would wait for all of
    # the device's dirty pages behind the load.
    fio_bg --output-format=json --output="$out" --filename=/dev/$dev \
        --runtime="$secs" --time_based --group_reporting=1 --invalidate=0 "$@" \
        --name=seqr --rw=read --direct=1 --bs=16k --numjobs=16 --thinktime=2ms \
            --offset_increment=32m --size=16m --prioclass=2 --prio=4 \
        --name=randr --rw=randread --direct=1 --bs=4k --numjobs=16 --size=512m --prioclass=1 \
        --name=syncw --rw=randwrite --direct=1 --bs=4k --numjobs=16 --offset=600m \
            --size=8m --offset_increment=8m --prioclass=3 \
        --name=asyncw --rw=write --direct=0 --bs=32k --numjobs=16 --offset=800m \
            --size=4m --offset_increment=4m --end_fsync=1 --prioclass=2 --prio=0 \
        >/dev/null
}

exits=0
phase stress && for s in anticipatory wpcas; do
    set_sched $dev "$s"
    log "stress on $s: 64 fio processes, short-lived and ioniced readers"
    stress_fio "$stress" "/share/fio/stress-$s.json"
    fpid=$FIO_PID
    sleep 2
    n=0
    while kill -0 $fpid 2>/dev/null; do
        short_lived 16
        exits=$((exits + 16))
        ioniced
        check_stats $dev "stress $s (under load)"
        n=$((n + 1))
    done
    wait $fpid
    wait_no_fio 120
    [ -s "/share/fio/stress-$s.json" ] || fail "stress fio on $s wrote no results"
    sync
    sleep 1
    check_stats $dev "stress $s" rest
    stats_of $dev >"/share/stats-stress-$s.txt"
    log "$s: $(tr '\n' ' ' <"/share/stats-stress-$s.txt")"
done

if phase switch; then
log "50 scheduler switches under load"
# The load runs until the switches are done (fio stops cleanly on TERM).
# Each process is held to 5 IOPS (320 offered, about what the disk does):
# a saturating load lets BFQ starve some processes for minutes, and every
# switch waits for the queue to drain.
stress_fio 3600 /share/fio/stress-switching.json --rate_iops=5
fpid=$FIO_PID
sleep 2
switches=0
cycle="anticipatory wpcas mq-deadline anticipatory bfq wpcas kyber none"
while [ $switches -lt 50 ]; do
    for s in $cycle; do
        [ $switches -lt 50 ] || break
        set_sched $dev "$s" || break 2
        # BFQ idles for each of 64 processes in turn; a switch away from it
        # then waits minutes for its queue to drain. Not what is tested here.
        [ "$s" = bfq ] && echo 0 >/sys/block/$dev/queue/iosched/slice_idle
        switches=$((switches + 1))
        log "switch $switches: $s"
        ours "$s" && check_stats $dev "switch $switches ($s)"
        short_lived 4
        exits=$((exits + 4))
    done
done
kill -0 $fpid 2>/dev/null || fail "the switching load ended before 50 switches"
kill -INT $fpid
wait $fpid
wait_no_fio 120
[ -s /share/fio/stress-switching.json ] || fail "the switching load wrote no results"
log "switches: $switches; short-lived processes: $exits"
echo "switches $switches" >/share/stress-counts.txt
echo "short_lived_processes $exits" >>/share/stress-counts.txt
echo "stress_processes 64" >>/share/stress-counts.txt
fi

# ---- 5. removing the module ----
if phase rmmod; then
set_sched $dev anticipatory
if rmmod as_iosched 2>/dev/null; then fail "rmmod succeeded while the module was in use"; fi
set_sched $dev mq-deadline
rmmod as_iosched || fail "rmmod after switching away"
grep -q as_iosched /proc/modules && fail "as_iosched still loaded"
load /share/as-iosched.ko || fail "insmod again"
set_sched $dev wpcas
dd if=/dev/$dev of=/dev/null bs=64k count=100 iflag=direct 2>/dev/null
check_stats $dev "after reload" rest
set_sched $dev none
rmmod as_iosched || fail "second rmmod"
fi

monitor_stop
check_dmesg
log "done"
