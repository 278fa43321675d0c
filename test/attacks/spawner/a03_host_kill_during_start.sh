#!/usr/bin/env bash
# A03: SIGKILL the host at a random moment of a run's start (provisioning, quota mounts, spawn in flight, handshake).
# Expected: processes gone with the spawner; the next start's recovery and sweeps leave no cgroup, mount or workspace.
# Usage: a03_host_kill_during_start.sh [process|bwrap] [rounds] [max delay ms]
source "$(dirname "$0")/lib.sh"
backend=${1:-bwrap}; rounds=${2:-10}; maxms=${3:-2500}
fresh "a03-$backend"
"${PADDOCK[@]}" runs list >/dev/null 2>&1
allids=""
for r in $(seq 1 "$rounds"); do
  out="$DATA/out$r.ndjson"
  "${PADDOCK[@]}" run --runner "$ATTACK/runner" --sandbox "$backend" --text "daemons hold:300" --json >"$out" \
    2>"$DATA/err$r.log" &
  host=$!
  ms=$((RANDOM % maxms))
  sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
  kill -9 "$host"; wait "$host" 2>/dev/null
  sleep 3
  ids=$(run_ids "$out")
  allids="$allids $ids"
  echo "round $r: killed at ${ms} ms; saw: $(grep -oE '"type":"[a-z]+"' "$out" | sort -u | tr '\n' ' ') run ${ids:-?}"
  m=$(markers | tr '\n' ' '); [ -n "$m" ] && echo "   processes left 3 s after the kill: $m"
done
# Run ids of rounds killed before the started line: the store knows them.
sleep 2
"${PADDOCK[@]}" runs list --json >"$DATA/list.json" 2>/dev/null
allids=$(echo "$allids $(run_ids "$DATA/list.json")" | tr ' ' '\n' | sort -u | tr '\n' ' ')
report_leftovers "after all rounds and the next start" $allids
echo "all data-folder quota images: $(ls "$DATA/quota/workspaces" 2>/dev/null | wc -l)"
echo "sockets: $(ls "$DATA/sockets" 2>/dev/null | wc -l)"
jq -r '.[]? // .runs[]? | "\(.id // .runId) \(.status)"' "$DATA/list.json" 2>/dev/null | sort | uniq -c -f1 | head
[ "${KEEP:-0}" = 1 ] || cleanup_ids $allids
