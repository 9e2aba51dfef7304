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

sched_of() { sed 's/.*\[\(.*\)\].*/\1/' "/sys/block/$1/queue/scheduler"; }

# Switch DEV to SCHED, then raise nr_requests (a switch resets it, and
# writing it fails under none), so the elevator, not the tag pool, orders.
set_sched() {
    local dev=$1 s=$2 nr=${3:-64}
    if ! echo "$s" >"/sys/block/$dev/queue/scheduler"; then
        fail "cannot switch $dev to $s"
        return 1
    fi
    [ "$(sched_of "$dev")" = "$s" ] || { fail "$dev shows $(sched_of "$dev"), not $s"; return 1; }
    if [ "$s" != none ]; then
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
