#!/usr/bin/env bash
# A01: a run's stdio MCP server (started by the host, not by the runner spawner) after a host SIGKILL.
# Expected (docs/runner-spawner.md, security-model "Host crash"; gateway.md "the servers' processes end with the
# run"): a host that dies takes its runs with it -- the spawner kills every run it started; recovery at the next
# start empties the run's cgroups and kills what carries its PADDOCK_RUN_ID.
# Usage: a01_mcp_server_outlives_host.sh [bwrap|proc]
source "$(dirname "$0")/lib.sh"
backend=${1:-bwrap}
fresh "a01-$backend"
apply_config
event_json "$backend" "info mcp hold:300" >"$DATA/event.json"
"${PADDOCK[@]}" dispatch -f "$DATA/event.json" --json >"$DATA/out.ndjson" 2>"$DATA/err.log" &
host=$!
wait_for "$DATA/out.ndjson" 'mcp: ' 60 || { cat "$DATA/err.log"; exit 1; }
ids=$(run_ids "$DATA/out.ndjson")
echo "host pid $host, run $ids"
grep -o 'mcp: .*' "$DATA/out.ndjson" | head -c 1500; echo
echo "MCP server processes before the kill:"; for p in $(pgrep -f "mcp/sleeper.py"); do echo "  $p $(tr "\0" " \
    " </proc/$p/cmdline | cut -c1-60) fds: $(ls -l /proc/$p/fd | awk "NR>1{print \$9 \$10 \$11}" | tr "\n" " ")"; done
kill -9 "$host"
sleep 5
report_leftovers "5 s after the host SIGKILL, no host start" $ids
echo "sleeper.py processes: $(pgrep -f 'mcp/sleeper.py' | tr '\n' ' ')"
"${PADDOCK[@]}" runs list >/dev/null 2>&1   # the next start: recovery
sleep 1
report_leftovers "after the next start (paddock runs list)" $ids
echo "sleeper.py processes: $(pgrep -f 'mcp/sleeper.py' | tr '\n' ' ')"
"${PADDOCK[@]}" runs show $ids --json 2>/dev/null | jq -c \
    '.run // . | {status, reason: (.outcome.reason // .reason)}' 2>/dev/null | head -3
if [ "${KEEP:-0}" != 1 ]; then cleanup_ids $ids; for p in $(pgrep -f 'mcp/sleeper.py'); do kill -9 $p; done; fi
