# Helpers for the guest's jobs (busybox ash; sourced by job.sh).
# Results go under /share (the host's run directory); failures are
# collected in /share/failures, one line each, and make the run fail.

FIO_ROOT=/tools
FIO_LIBS=$FIO_ROOT/lib/x86_64-linux-gnu:$FIO_ROOT/usr/lib/x86_64-linux-gnu:$FIO_ROOT/usr/lib/x86_64-linux-gnu/ceph

log() { echo "[guest $(cut -d' ' -f1 /proc/uptime)] $*"; }
fail() {
    echo "$*" >>/share/failures
    log "FAIL: $*"
}

# Run the host's fio without a chroot: its own loader and libraries.
fio() {
    "$FIO_ROOT/lib64/ld-linux-x86-64.so.2" --library-path "$FIO_LIBS" \
        "$FIO_ROOT/usr/bin/fio" "$@"
}

# fio in the background; FIO_PID is fio's own pid (the subshell execs it),
# so that a signal reaches fio, which then stops its jobs and reports.
fio_bg() {
    (exec "$FIO_ROOT/lib64/ld-linux-x86-64.so.2" --library-path "$FIO_LIBS" \
        "$FIO_ROOT/usr/bin/fio" "$@") &
    FIO_PID=$!
}

# Wait until no fio process is left (at most $1 seconds).
wait_no_fio() {
    local n=0
    while grep -qs usr/bin/fio /proc/[0-9]*/cmdline; do
        n=$((n + 1))
        [ $n -le "${1:-60}" ] || { fail "fio processes still running after ${1:-60}s"; return 1; }
        sleep 1
    done
}

# insmod one of the initramfs's modules (or a path) with parameters. A
# module already there (loaded, or built into a kernel such as the debug
# one, which takes the parameters on its command line) is left alone.
load() {
    local m=$1
    shift
    case $m in
    */*) insmod "$m" "$@" ;;
    *) [ -d "/sys/module/$(echo "$m" | tr - _)" ] && return 0
       # not in the initramfs: the kernel has it built in (the debug one)
       [ -e "/lib/modules/$m.ko" ] || return 0
       insmod "/lib/modules/$m.ko" "$@" ;;
    esac
}

# Every module of kernel/ the host put into /share: as-iosched.ko, and a
# researcher's NAME-iosched.ko (iolab elevator new NAME).
load_ours() {
    local ko ret=0
    for ko in /share/*.ko; do
        [ -e "$ko" ] || continue
        load "$ko" || { fail "insmod $(basename "$ko")"; ret=1; }
    done
    return $ret
}

sched_of() { sed 's/.*\[\(.*\)\].*/\1/' "/sys/block/$1/queue/scheduler"; }

# Switch DEV to SCHED, then raise nr_requests (a switch resets it, and
# writing it fails under none), so the elevator, not the tag pool, orders.
# NR "default" keeps what the switch set: 2 * min(device depth, 128).
set_sched() {
    local dev=$1 s=$2 nr=${3:-64}
    if ! echo "$s" >"/sys/block/$dev/queue/scheduler"; then
        fail "cannot switch $dev to $s"
        return 1
    fi
    [ "$(sched_of "$dev")" = "$s" ] || { fail "$dev shows $(sched_of "$dev"), not $s"; return 1; }
    if [ "$s" != none ] && [ "$nr" != default ]; then
        echo "$nr" >"/sys/block/$dev/queue/nr_requests" || fail "nr_requests=$nr refused under $s"
    fi
}

# The module's counters as "key value" lines (empty for other elevators).
stats_of() {
    local f=/sys/block/$1/queue/iosched/stats
    [ -r "$f" ] && cat "$f"
}

stat_val() { # stats-text key
    echo "$1" | awk -v k="$2" '$1 == k { print $2 }'
}

# A-T = A-S + A-F in one snapshot; at rest also dispatched = completed
# (+ requeued) and nothing queued or in flight.
check_stats() { # dev label [rest]
    local s t ok f
    s=$(stats_of "$1") || return 0
    [ -n "$s" ] || return 0
    t=$(stat_val "$s" antic_started)
    ok=$(stat_val "$s" antic_succeeded)
    f=$(stat_val "$s" antic_failed)
    [ "$t" -eq $((ok + f)) ] || fail "$2: A-T $t != A-S $ok + A-F $f"
    if [ "${3:-}" = rest ]; then
        local d c r q i
        d=$(stat_val "$s" dispatched)
        c=$(stat_val "$s" completed)
        r=$(stat_val "$s" requeued)
        q=$(stat_val "$s" queued)
        i=$(stat_val "$s" in_flight)
        [ "$d" -eq $((c + r)) ] || fail "$2: at rest dispatched $d != completed $c + requeued $r"
        [ "$q" -eq 0 ] && [ "$i" -eq 0 ] || fail "$2: at rest queued $q, in flight $i"
    fi
}

# Any warning, bug, oops, lockdep report or hung task fails the run.
# (Lockdep's own reports: "possible circular/recursive locking", "inconsistent
# lock state", "suspicious RCU usage", "held lock freed", "bad unlock
# balance", and "lockdep is turned off" after any of them; the boot line
# "RCU lockdep checking is enabled" is not one.)
BAD_DMESG='WARNING:|BUG:|Oops|general protection|Call Trace|possible circular locking|possible recursive locking|inconsistent lock state|suspicious RCU usage|held lock freed|bad unlock balance|lockdep is turned off|DEBUG_LOCKS_WARN_ON|hung_task|blocked for more than|soft lockup|hard LOCKUP|rcu_preempt detected stalls|rcu_sched detected stalls|KASAN|UBSAN|kernel BUG|refcount_t:|list_add corruption|list_del corruption|stack-protector|segfault'

check_dmesg() {
    if dmesg | grep -E "$BAD_DMESG" >/tmp/bad-dmesg; then
        fail "dmesg: $(head -3 /tmp/bad-dmesg | tr '\n' '|')"
    fi
}

# The hung-task watchdog reports a task in D state for 60 s (the kernel's
# default is 120 s; a run here lasts a few minutes). Buffered writers wait
# in writeback throttling for seconds under heavy sync load, legitimately.
watchdogs_on() {
    echo 60 >/proc/sys/kernel/hung_task_timeout_secs 2>/dev/null
}

# A background monitor for hangs: every few seconds, the elevator, its
# counters and blk-mq's debugfs state of DEV, into /share/monitor.log.
monitor_start() { # dev seconds
    (
        d=/sys/kernel/debug/block/$1
        while :; do
            {
                echo "== $(cut -d' ' -f1 /proc/uptime) $(sched_of "$1")"
                stats_of "$1" | tr '\n' ' '
                echo
                for f in state dispatch busy dispatch_busy run; do
                    [ -r "$d/hctx0/$f" ] && echo "hctx0/$f: $(tr '\n' ' ' <"$d/hctx0/$f")"
                done
                [ -r "$d/hctx0/sched_tags" ] && grep -E 'busy|depth' "$d/hctx0/sched_tags" | tr '\n' ' '
                [ -r "$d/hctx0/tags" ] && grep -E 'busy|depth' "$d/hctx0/tags" | tr '\n' ' '
                echo
                cat "$d/state" 2>/dev/null
            } >>/share/monitor.log 2>&1
            sleep "$2"
        done
    ) &
    MONITOR_PID=$!
}
monitor_stop() { [ -n "${MONITOR_PID:-}" ] && kill "$MONITOR_PID" 2>/dev/null; }

# ---- the module's defects that only a real kernel shows (issue 23) ----

# A guest that cannot finish (its I/O stalled for good: `sync` would hang)
# saves what it has and reboots at once; the host then sees the failure.
die_now() {
    fail "$*"
    dmesg >/share/dmesg.txt
    echo 1 >/share/job.rc
    sync -f /share/failures /share/dmesg.txt /share/job.rc 2>/dev/null
    echo b >/proc/sysrq-trigger
}

# Wait for background fio FIO_PID (at most $1 s) while the elevator of DEV
# makes progress; a queue with requests and no dispatch for $2 s has
# stalled. Sets PROGRESS: "done", "timeout", or "stall" with the counters.
wait_progress() { # max_s stall_s dev
    local t=0 idle=0 last= now q
    PROGRESS=done
    while kill -0 "$FIO_PID" 2>/dev/null; do
        [ $t -lt "$1" ] || { PROGRESS=timeout; return 1; }
        sleep 1
        t=$((t + 1))
        now=$(stat_val "$(stats_of "$3")" dispatched)
        q=$(stat_val "$(stats_of "$3")" queued)
        if [ "$now" = "$last" ] && [ "${q:-0}" -gt 0 ]; then
            idle=$((idle + 1))
            if [ $idle -ge "$2" ]; then
                PROGRESS="stall: $(stats_of "$3" | tr '\n' ' ')"
                return 1
            fi
        else
            idle=0
        fi
        last=$now
    done
    wait "$FIO_PID"
}

# Write-back runs all the time: async requests always wait for tags.
small_dirty_limits() {
    echo 1048576 >/proc/sys/vm/dirty_background_bytes
    echo 4194304 >/proc/sys/vm/dirty_bytes
}
default_dirty_limits() {
    echo 10 >/proc/sys/vm/dirty_background_ratio
    echo 20 >/proc/sys/vm/dirty_ratio
}

# limit_depth, at the default nr_requests (2 on a device of depth 1): a
# buffered writer and a sequential O_DIRECT reader under an elevator of
# ours, antic_expire 50 ms, write-back throttling off (wbt_lat_usec 0, as
# BFQ turns it off; on, it holds background writes to one request in
# flight and hides the defect). Without limit_depth write-back takes both
# scheduler tags and the reader AS waits for blocks in tag allocation, so
# the waits fail (A-F); with it one tag is always left for sync requests
# and they succeed. Prints "ELEVATOR nr_requests async_depth A-T A-S A-F
# reader_KiB/s"; CHECK=1 fails the run if more than one wait in 8 failed
# (measured here: 23-25% failed without limit_depth, 0.6-6% with it).
depth_check() { # dev seconds
    local dev=$1 secs=$2 s st nr wbt
    small_dirty_limits
    wbt=$(cat /sys/block/$dev/queue/wbt_lat_usec)
    for s in anticipatory wpcas; do
        set_sched "$dev" "$s" default || continue
        echo 0 >/sys/block/$dev/queue/wbt_lat_usec
        nr=$(cat /sys/block/$dev/queue/nr_requests)
        echo 50 >/sys/block/$dev/queue/iosched/antic_expire
        fio --output-format=json --output="/share/fio/depth-$s.json" --filename=/dev/$dev \
            --runtime="$secs" --time_based --group_reporting=0 --invalidate=0 \
            --name=writer --rw=write --direct=0 --bs=64k --offset=512m --size=256m \
            --name=reader --rw=read --direct=1 --bs=16k --offset=0 --size=256m >/dev/null ||
            fail "depth: fio under $s"
        sync
        st=$(stats_of "$dev")
        echo "$s nr_requests=$nr async_depth=$(stat_val "$st" async_depth)" \
            "A-T=$(stat_val "$st" antic_started) A-S=$(stat_val "$st" antic_succeeded)" \
            "A-F=$(stat_val "$st" antic_failed)" \
            "reader_KiB/s=$(awk '/"jobname" : "reader"/ { r = 1 } r && /"bw" :/ { gsub(",", ""); print $3; exit }' "/share/fio/depth-$s.json")"
        if [ "${CHECK:-0}" = 1 ]; then
            [ "$nr" = 2 ] || fail "depth: nr_requests $nr under $s, not the default 2"
            [ "$(stat_val "$st" async_depth)" = 1 ] || fail "depth: async_depth under $s is not 1 of 2"
            [ $((8 * $(stat_val "$st" antic_failed))) -le "$(stat_val "$st" antic_started)" ] ||
                fail "depth: under $s the awaited reader was kept from its tag: $(echo "$st" | tr '\n' ' ')"
            check_stats "$dev" "depth $s" rest
            # depth_updated runs before q->nr_requests changes: the
            # limit must follow the resized tag bitmap (48 of 64)
            echo 64 >/sys/block/$dev/queue/nr_requests
            [ "$(stat_val "$(stats_of "$dev")" async_depth)" = 48 ] ||
                fail "depth: async_depth under $s at nr_requests 64 is $(stat_val "$(stats_of "$dev")" async_depth), not 48"
        fi
    done
    echo "$wbt" >/sys/block/$dev/queue/wbt_lat_usec
    default_dirty_limits
}

# A scsi_debug disk that takes two commands at a time (max_queue=2: a tag
# set of depth 2, so that a direction change can wait for a request in
# flight); sets SD_DEV to its name.
scsi_debug_disk() {
    local m d n=0
    for m in crct10dif_common crct10dif_generic crc-t10dif scsi_common scsi_mod \
        crc64 crc64-rocksoft t10-pi sd_mod; do
        load "$m" 2>/dev/null
    done
    load scsi_debug max_queue=2 dev_size_mb=256 statistics=1 || { fail "insmod scsi_debug"; return 1; }
    while [ $n -lt 100 ]; do
        for d in /sys/bus/pseudo/drivers/scsi_debug/adapter*/host*/target*/*/block/*; do
            [ -e "$d" ] && { SD_DEV=$(basename "$d"); return 0; }
        done
        sleep 0.1
        n=$((n + 1))
    done
    fail "no scsi_debug disk"
    return 1
}

# RQF_DONTPREP requeues: scsi_debug fails every 4th command with ABORTED
# COMMAND (opts 0x10, a transport error), the SCSI midlayer retries it
# (scsi_queue_insert -> blk_mq_requeue_request) and blk-mq sends it
# straight to the hardware queue's dispatch list (RQF_DONTPREP), past the
# elevator. A buffered writer and an O_DIRECT reader make AS change batch
# direction often; a change waiting for a retried write stalled the queue
# for good before issue 23 (the module's requeue_request left the change
# pending). Prints "ELEVATOR done|stall|timeout requeued=N ..."; a stall
# reboots the guest at once (its I/O can never finish). CHECK=1 also fails
# the run unless requests were requeued and the counters are at rest.
dontprep_check() { # seconds
    local dev secs=$1 s st D=/sys/bus/pseudo/drivers/scsi_debug
    scsi_debug_disk || return
    dev=$SD_DEV
    small_dirty_limits
    for s in anticipatory wpcas; do
        # 64 requests: the tag pool is not what holds the load back here
        set_sched "$dev" "$s" || continue
        echo 4 >$D/every_nth
        echo 16 >$D/opts
        fio_bg --output-format=json --output="/share/fio/dontprep-$s.json" --filename=/dev/$dev \
            --runtime="$secs" --time_based --group_reporting=0 --invalidate=0 \
            --name=writer --rw=write --direct=0 --bs=64k --offset=128m --size=96m \
            --name=reader --rw=read --direct=1 --bs=16k --thinktime=1ms --offset=0 --size=96m
        wait_progress $((secs + 120)) 30 "$dev"
        st=$(stats_of "$dev")
        echo "$s $PROGRESS requeued=$(stat_val "$st" requeued) dispatched=$(stat_val "$st" dispatched)" \
            "completed=$(stat_val "$st" completed) queued=$(stat_val "$st" queued)" \
            "in_flight=$(stat_val "$st" in_flight)"
        case $PROGRESS in
        done) ;;
        *) for f in state dispatch busy; do
               echo "hctx0/$f: $(cat /sys/kernel/debug/block/$dev/hctx0/$f 2>/dev/null | tr '\n' ' ')"
           done
           die_now "dontprep: $PROGRESS under $s" ;;
        esac
        echo 0 >$D/every_nth
        echo 0 >$D/opts
        sync
        if [ "${CHECK:-0}" = 1 ]; then
            st=$(stats_of "$dev")
            [ "$(stat_val "$st" requeued)" -gt 0 ] || fail "dontprep: no request was requeued under $s"
            check_stats "$dev" "dontprep $s" rest
        fi
    done
    set_sched "$dev" none
    default_dirty_limits
}
