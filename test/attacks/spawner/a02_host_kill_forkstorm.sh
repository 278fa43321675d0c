#!/usr/bin/env bash
# A02: SIGKILL the host (paddock run) while its runner double-forks, setsids, re-execs with `env -i` and forks
# continuously (a fork in flight at the moment of the kill). Expected (docs/runner-spawner.md "The host dies"): the
# spawner kills the run's cgroup and group; nothing of the run is left, with no host start.
# Usage: a02_host_kill_forkstorm.sh [process|bwrap] [rounds]
source "$(dirname "$0")/lib.sh"
backend=${1:-process}; rounds=${2:-3}
fresh "a02-$backend"
bad=0
for r in $(seq 1 "$rounds"); do
  out="$DATA/out$r.ndjson"
  "${PADDOCK[@]}" run --runner "$ATTACK/runner" --sandbox "$backend" --text "daemons forkstorm:3 hold:300" \
    --json >"$out" 2>"$DATA/err$r.log" &
  host=$!
  wait_for "$out" 'forkstorm started' 60 || { cat "$DATA/err$r.log"; exit 1; }
  sleep "0.$((RANDOM % 10))"
  ids=$(run_ids "$out")
  kill -9 "$host"
  sleep 5
  left=$(report_leftovers "round $r: 5 s after the host SIGKILL ($backend), no host start" $ids)
  echo "$left"
  if echo "$left" | grep -qE 'marker procs: [0-9]|PADDOCK_RUN_ID: [0-9]'; then bad=$((bad + 1)); fi
  "${PADDOCK[@]}" runs list >/dev/null 2>&1
  report_leftovers "round $r: after the next start" $ids
  cleanup_ids $ids
done
echo "rounds with processes left after the host SIGKILL: $bad of $rounds"
