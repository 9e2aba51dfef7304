#!/usr/bin/env bash
# Starts a slow disk for the guest on a Unix socket and prints its PID; give
# the socket to run.sh --nbd. Stop it with kill PID (SIGTERM).
#
#   testbed/disk.sh emu DISK IMAGE SOCKET [LOG]
#       iolab emu: the timing of a simulator disk model (hp97560, modern7200,
#       fixed), every request logged to LOG (needs `make build`)
#   testbed/disk.sh nbdkit DELAY_MS IMAGE SOCKET
#       nbdkit's file plugin behind its delay filter: a fixed delay per read
#       and write (no model; when iolab emu is not at hand)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kind=${1:-}
case $kind in
emu)
    [ $# -ge 4 ] || tb_die "usage: disk.sh emu DISK IMAGE SOCKET [LOG]"
    iolab=$REPO_DIR/.venv/bin/iolab
    [ -x "$iolab" ] || iolab=$(command -v iolab) || tb_die "no iolab: make build"
    args=(emu --disk "$2" --image "$3" --socket "$4" --no-sync)
    [ -n "${5:-}" ] && args+=(--log "$5")
    rm -f "$4"
    "$iolab" "${args[@]}" >"$4.out" 2>&1 &
    ;;
nbdkit)
    [ $# -eq 4 ] || tb_die "usage: disk.sh nbdkit DELAY_MS IMAGE SOCKET"
    [ -e "$3" ] || truncate -s 1G "$3"
    rm -f "$4" "$4.pid"
    # nbdkit daemonizes itself; its pidfile appears when it accepts
    nbdkit --unix "$4" --pidfile "$4.pid" --filter=delay file "$3" \
        rdelay="$2"ms wdelay="$2"ms >"$4.out" 2>&1 || tb_die "nbdkit: $(tail -3 "$4.out")"
    for _ in $(seq 100); do
        [ -s "$4.pid" ] && { cat "$4.pid"; exit 0; }
        sleep 0.1
    done
    tb_die "nbdkit wrote no pidfile"
    ;;
*) tb_die "usage: disk.sh emu|nbdkit ..." ;;
esac
pid=$!
for _ in $(seq 100); do
    # the socket file appears just before the server listens on it
    [ -S "$4" ] && { sleep 0.5; echo "$pid"; exit 0; }
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
kill "$pid" 2>/dev/null || true
tb_die "the $kind disk did not start: $(cat "$4.out" 2>/dev/null | tail -3)"
