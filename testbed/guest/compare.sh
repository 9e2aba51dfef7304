# Runs of the simulator-against-kernel comparison, one boot per disk.
# The host leaves in /share: plan.txt ("ID WORKLOAD ELEVATOR" per line),
# jobs/WORKLOAD.fio, disk.conf ("marker_sector N"), and wpcas.conf (sysfs
# name and value per line: the disk's seek curve). Each run is bracketed by
# two 4 KiB reads, the (2*ID)th and (2*ID+1)th 4 KiB block from
# marker_sector on (QEMU's NBD client reads whole 4 KiB blocks), so that the
# emulator's request log can be cut into runs.
# A fourth field on a plan line names a file in /share/tunables/ whose
# "name value" lines are written to the elevator's sysfs after the switch
# (iolab paper wpcas --kernel: WPCAS's start-up rule).
# With /share/trace.conf (one elevator name, or "run:ID", per line), runs of
# those elevators (or that run) are traced with the kernel's blk tracer: the
# block layer's events and the elevator's own messages (bfq_log) go to
# /share/runs/ID.trace.
dev=vda
load virtio_blk queue_depth=1 num_request_queues=1
load bfq
load kyber-iosched
load_ours || return 1
mkdir -p /share/runs
: >/share/runs/clock.txt
marker=$(awk '$1 == "marker_sector" { print $2 }' /share/disk.conf)
[ -n "$marker" ] || { fail "no marker_sector in disk.conf"; return 1; }
# After each marker, the guest's own clock (CLOCK_MONOTONIC in ns, from
# timer_list), so that the run's length by the guest's clock can be set
# beside the emulator's (the two clocks part ways under -icount if the
# guest falls behind the host).
mark() { dd if=/dev/$dev of=/dev/null bs=4096 count=1 iflag=direct skip=$((marker / 8 + $1)) 2>/dev/null ||
    fail "marker read $1"
    awk -v m="$1" '/^now at/ { print m, $3; exit }' /proc/timer_list >>/share/runs/clock.txt; }
quiet() { # until the device has nothing in flight (at most 30 s)
    local n=0
    while [ "$(awk '{ print $9 }' /sys/block/$dev/stat)" != 0 ] && [ $n -lt 300 ]; do
        sleep 0.1
        n=$((n + 1))
    done
}
T=/sys/kernel/debug/tracing
traced() { [ -f /share/trace.conf ] && grep -qx -e "$1" -e "run:$2" /share/trace.conf; } # elevator id
trace_on() {
    echo 0 >$T/tracing_on && echo >$T/trace && echo 32768 >$T/buffer_size_kb &&
        echo blk >$T/current_tracer && echo 1 >/sys/block/$dev/trace/enable &&
        echo 1 >$T/tracing_on || fail "blk tracer on $dev"
}
trace_off() { # $1: the run's id
    echo 0 >$T/tracing_on
    cp $T/trace "/share/runs/$1.trace" || fail "saving the trace of run $1"
    grep -q 'LOST EVENTS\|buffer overflow' "/share/runs/$1.trace" && fail "run $1: the trace lost events"
    echo 0 >/sys/block/$dev/trace/enable
    echo nop >$T/current_tracer
}
while read -r id wl el conf; do
    [ -n "$id" ] || continue
    # a fresh elevator instance: counters from zero, no history
    set_sched $dev none
    set_sched $dev "$el" || continue
    if [ "$el" = wpcas ]; then
        while read -r name value; do
            echo "$value" >/sys/block/$dev/queue/iosched/"$name" || fail "wpcas $name=$value"
        done </share/wpcas.conf
    fi
    if [ -n "$conf" ]; then
        while read -r name value; do
            echo "$value" >/sys/block/$dev/queue/iosched/"$name" || fail "run $id: $conf: $name=$value"
        done <"/share/tunables/$conf"
        # what the elevator took, read back: the report and CI check it
        while read -r name value; do
            echo "$name $(cat /sys/block/$dev/queue/iosched/"$name")"
        done <"/share/tunables/$conf" >"/share/runs/$id.tunables"
    fi
    quiet
    if traced "$el" "$id"; then trace_on; fi
    mark $((2 * id))
    fio --output-format=json --output="/share/runs/$id.json" "/share/jobs/$wl.fio" >/dev/null ||
        fail "run $id ($wl on $el): fio failed"
    quiet
    mark $((2 * id + 1))
    if traced "$el" "$id"; then trace_off "$id"; fi
    # A buffered writer leaves dirty pages: write them back and drop the
    # cache now, outside the run's markers, so the next run starts clean.
    sync
    echo 3 >/proc/sys/vm/drop_caches
    quiet
    stats_of $dev >"/share/runs/$id.stats"
    check_stats $dev "run $id ($wl on $el)" rest
    log "run $id: $wl on $el done"
done </share/plan.txt
check_dmesg
