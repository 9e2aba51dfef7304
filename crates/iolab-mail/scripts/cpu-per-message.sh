#!/bin/bash
# Where the CPU goes per message (docs/mail.md, "Where the CPU goes at
# 5,000 sessions"): runs the stand-alone server behind smtp-sink, loads it
# with smtp-source, and prints accepted and end-to-end msg/s and the CPU
# time (user + system) per message of the server, smtp-source and smtp-sink.
#
#   cpu-per-message.sh BIN QUEUE [cpu|perf|strace]
#   BIN: target/release/iolab-mail; QUEUE: fastqueue or filedir
#   env: N (messages, 20000), U (sessions, 5000), SIZE (1024), DIR (/var/tmp/iolab-mail-cpu)
#   perf: perf record -F 499 -g on the server (DIR/perf.data);
#   strace: strace -c -f on the server (DIR/strace.txt; slows it several-fold).
# Needs Debian's postfix package (smtp-source, smtp-sink) and, for -u, root.
set -eu
BIN=$1; Q=$2; MODE=${3:-cpu}
N=${N:-20000}; U=${U:-5000}; SIZE=${SIZE:-1024}; W=${DIR:-/var/tmp/iolab-mail-cpu}
rm -rf "$W"; mkdir -p "$W"
SINK=$((32000 + RANDOM % 1000)); SRV=$((33000 + RANDOM % 1000))
user=(); [ "$(id -u)" = 0 ] && user=(-u postfix)
smtp-sink -c "${user[@]}" 127.0.0.1:$SINK 4096 > "$W/sink.out" 2>&1 & SINKPID=$!
"$BIN" serve --queue "$Q" --queue-dir "$W/q" --relay 127.0.0.1:$SINK --listen 127.0.0.1:$SRV > "$W/server.out" 2>&1 & SRVPID=$!
for _ in $(seq 100); do grep -q listening "$W/server.out" && break; sleep 0.1; done
cpu() { awk '{print ($14 + $15) / 100}' /proc/$1/stat; }   # utime + stime, clock ticks of 10 ms
TRACER=
case $MODE in
  perf) perf record -F 499 -g -p $SRVPID -o "$W/perf.data" 2>/dev/null & TRACER=$! ;;
  strace) strace -c -f -p $SRVPID -o "$W/strace.txt" & TRACER=$!; sleep 1 ;;
  cpu) ;;
  *) echo "mode: cpu, perf or strace" >&2; exit 2 ;;
esac
S0=$(cpu $SRVPID); K0=$(cpu $SINKPID); T0=$(date +%s.%N)
/usr/bin/time -f "%U %S" -o "$W/source.time" \
  smtp-source -s "$U" -m "$N" -l "$SIZE" -f load@iolab.test -t sink@iolab.test 127.0.0.1:$SRV
T1=$(date +%s.%N)
# End to end: until smtp-sink's running count (-c) reaches N.
until [ "$(tr '\r' '\n' < "$W/sink.out" | grep -o 'mesg=[0-9]*' | tail -1 | cut -d= -f2)" -ge "$N" ] 2>/dev/null; do sleep 0.05; done
T2=$(date +%s.%N)
S1=$(cpu $SRVPID); K1=$(cpu $SINKPID)
if [ -n "$TRACER" ]; then kill -INT $TRACER; wait $TRACER 2>/dev/null || true; fi
kill -TERM $SRVPID; wait $SRVPID 2>/dev/null || true
kill $SINKPID; wait $SINKPID 2>/dev/null || true
per() { echo "scale=0; ($1) * 1000000 / $N" | bc; }
echo "$Q $MODE: $N messages, $U sessions: accepted $(echo "$N / ($T1 - $T0)" | bc) msg/s, end to end $(echo "$N / ($T2 - $T0)" | bc) msg/s;" \
  "CPU us/msg: server $(per "$S1 - $S0"), smtp-source $(per "$(awk '{print $1 + $2}' "$W/source.time")"), smtp-sink $(per "$K1 - $K0")"
