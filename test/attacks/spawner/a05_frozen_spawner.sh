#!/usr/bin/env bash
# A05 (process backend): a runner puts its parent, the runner spawner, into a frozen v1 freezer cgroup instead of
# SIGSTOPping it. Expected (docs/runner-spawner.md, decisions SP4): a spawner found stopped (/proc state T or t) when a
# start is asked is given up at once and the start goes to a new spawner; a given-up spawner is SIGKILLed.
# Usage: a05_frozen_spawner.sh [freezespawner|stopspawner]
source "$(dirname "$0")/lib.sh"
mode=${1:-freezespawner}
fresh "a05-$mode"
apply_config
start_serve || exit 1
r1=$(post_event proc "$mode hold:1")
echo "run 1 (process, $mode): $r1"
wait_status "$r1" 'completed|failed|crashed|timed_out|cancelled' 60
echo "run 1: $(run_summary "$r1")"
sp=$(curl -s "$URL/v1/runs/$r1/events" -H "authorization: Bearer $TOKEN" --max-time 5 | grep -oE \
    '(froze|stopped) spawner [0-9]+' | head -1 | grep -oE '[0-9]+$')
echo "old spawner pid $sp, state $(awk '{print $3}' /proc/$sp/stat 2>/dev/null)"
t0=$(date +%s%N)
r2=$(post_event victim "info")
wait_status "$r2" 'completed|failed|crashed|timed_out|cancelled' 60
t1=$(date +%s%N)
echo "run 2 (bwrap, another binding, asked after the stop): $(run_summary "$r2") in $(( (t1 - t0) / 1000000 )) ms"
r3=$(post_event victim "info")
wait_status "$r3" 'completed|failed|crashed|timed_out|cancelled' 60
echo "run 3: $(run_summary "$r3")"
sleep 1
echo "old spawner $sp after the host gave it up: $(cat /proc/$sp/status 2>/dev/null | grep -E '^State' || echo gone)"
echo "   its children: $(ps -o pid=,stat=,comm= --ppid "$sp" 2>/dev/null | tr '\n' ';')"
kill -TERM "$SERVE"; wait "$SERVE"
sleep 1
echo "after serve stopped: old spawner $(grep -E '^State' /proc/$sp/status 2>/dev/null || echo gone)"
ids="$r1 $r2 $r3"
report_leftovers "after serve stopped" $ids
if [ "${KEEP:-0}" != 1 ]; then
  for d in /sys/fs/cgroup/freezer/attack-freeze-*; do [ -d "$d" ] && echo THAWED >"$d/freezer.state"; done
  sleep 0.5; [ -n "$sp" ] && kill -CONT "$sp" 2>/dev/null
  for d in /sys/fs/cgroup/freezer/attack-freeze-*; do [ -d "$d" ] && rmdir "$d"; done
  sleep 0.5; echo "after thaw: old spawner $(grep -E '^State' /proc/$sp/status 2>/dev/null || echo gone)"
  cleanup_ids $ids
fi
