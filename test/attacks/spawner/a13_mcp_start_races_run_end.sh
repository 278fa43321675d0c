#!/usr/bin/env bash
# A13: a runner asks for an MCP tool call and answers its run at once (or after a few ms), so that the host starts the
# run's stdio MCP server while the run ends. Expected (gateway.md): "The connections and the servers' processes end
# with the run" -- nothing of the server left after the run's end.
# Usage: a13_mcp_start_races_run_end.sh [bwrap|proc] [rounds]
source "$(dirname "$0")/lib.sh"
bot=${1:-bwrap}; rounds=${2:-6}
fresh "a13-$bot"
apply_config
start_serve || exit 1
bad=0; ids=""
for r in $(seq 1 "$rounds"); do
  delay=$(( (r - 1) * ${STEP_MS:-40} ))
  rid=$(post_event "$bot" "mcpfire:$delay")
  wait_status "$rid" 'completed|failed|crashed|timed_out|cancelled' 60
  sleep 3
  srv=$(pgrep -f 'mcp/sleeper.py' | tr '\n' ' '); m=$(markers | tr '\n' ' '); cg=$(cgroups_of "$rid-mcp" | wc -l)
  echo "round $r (tool call, result ${delay} ms later): $(run_status "$rid"); server procs: ${srv:-none};" \
    "markers: ${m:-none}; mcp cgroup dirs: $cg"
  [ -n "$srv$m" ] && bad=$((bad + 1))
  ids="$ids $rid"
done
echo "rounds with a server left after its run ended: $bad of $rounds"
kill -TERM "$SERVE"; wait "$SERVE"
sleep 1
echo "after serve stopped: server procs: $(pgrep -f 'mcp/sleeper.py' | tr '\n' ' '); markers: $(markers | tr '\n' ' ')"
if [ "${KEEP:-0}" != 1 ]; then cleanup_ids $ids; for p in $(pgrep -f 'mcp/sleeper.py'); do kill -9 "$p"; done; fi
