# Smoke: load everything, switch through every elevator, one short fio each.
log "kernel $(uname -r)"
load virtio_blk queue_depth=1 num_request_queues=1
load bfq
load kyber-iosched
load_ours
cat /sys/block/vda/queue/scheduler
for s in none mq-deadline kyber bfq anticipatory wpcas; do
    set_sched vda "$s" || continue
    fio --name=r --filename=/dev/vda --direct=1 --rw=randread --bs=4k --runtime=2 --time_based \
        --numjobs=2 --group_reporting --output-format=json --output=/share/smoke-$s.json >/dev/null
    log "$s: $(grep -m1 '"iops"' /share/smoke-$s.json)"
    check_stats vda "$s" rest
    ls /sys/block/vda/queue/iosched/ | tr '\n' ' '; echo
done
stats_of vda
set_sched vda mq-deadline
rmmod as_iosched || fail "rmmod as_iosched"
check_dmesg
