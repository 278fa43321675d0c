#!/usr/bin/env bash
# A11: cancel a run (HTTP API) at a random moment of its start: while it is provisioned, while the spawner forks it,
# before its handshake. Expected: the run ends `cancelled`, and whatever of it started is killed (the late pid of an
# abandoned start, the cgroup, the PADDOCK_RUN_ID scan): nothing left, and the outcome says so.
# Usage: a11_cancel_during_start.sh [proc|bwrap|warm] [rounds] [max delay ms]
source "$(dirname "$0")/lib.sh"
bot=${1:-proc}; rounds=${2:-12}; maxms=${3:-600}
fresh "a11-$bot"
apply_config
start_serve || exit 1
bad=0; ids=""
for r in $(seq 1 "$rounds"); do
  ms=$((RANDOM % maxms))
  rid=$(post_event "$bot" "daemons hold:300")
  sleep "$(printf '0.%03d' "$ms")"
  curl -s -X POST "$URL/v1/runs/$rid/cancel" -H "authorization: Bearer $TOKEN" -H \
    'content-type: application/json' -d '{"reason":"attack"}' >/dev/null
  wait_status "$rid" 'completed|failed|crashed|timed_out|cancelled' 60
  sleep 1
  left=$(markers | tr '\n' ' ')
  env=$(procs_with_env "$rid" | tr '\n' ' ')
  st=$(run_summary "$rid" | jq -c '{status, survivors: .survivors}')
  echo "round $r: cancel after ${ms} ms -> $st left: ${left:-none} ${env:+env:$env}"
  [ -n "$left$env" ] && bad=$((bad + 1))
  ids="$ids $rid"
  kill_markers
done
echo "rounds with something left: $bad of $rounds"
kill -TERM "$SERVE"; wait "$SERVE"
report_leftovers "after serve stopped" $ids
[ "${KEEP:-0}" = 1 ] || cleanup_ids $ids
