# The module's defects that only a real kernel shows (issue 23), measured
# without judging: the before/after runs of docs/kernel.md boot this job
# with an old module (run.sh --module) and with the current one.
# Arguments: PHASES ("depth dontprep"), SECONDS per elevator (default 10).
phases=" ${1:-depth dontprep} "
secs=${2:-10}
mkdir -p /share/fio
watchdogs_on
load virtio_blk queue_depth=1 num_request_queues=1
load_ours
case $phases in *" depth "*) depth_check vda "$secs" | tee /share/depth.txt ;; esac
case $phases in *" dontprep "*) dontprep_check "$secs" | tee /share/dontprep.txt ;; esac
check_dmesg
