#!/usr/bin/env bash
# A09: a terminal's Ctrl-C (SIGINT to the foreground process group) or a service manager's stop (SIGTERM to every
# process of the unit) reaches the host's helpers too, since they share its process group. Expected (README "Use"):
# Ctrl-C cancels the run (run/cancel, then a kill after the grace), exit code 130 `cancelled`; `serve` on SIGTERM drains
# its runs (--on-stop drain).
# Usage: a09_group_signal.sh [INT|TERM] [process|bwrap]
source "$(dirname "$0")/lib.sh"
sig=${1:-INT}; backend=${2:-process}
fresh "a09-$sig-$backend"
setsid "${PADDOCK[@]}" run --runner "$ATTACK/runner" --sandbox "$backend" --text "hold:8" --json \
    >"$DATA/out.ndjson" 2>"$DATA/err.log" &
host=$!
wait_for "$DATA/out.ndjson" '"type":"started"' 60 || exit 1
sleep 1
echo "process group $host: $(ps -o pid=,comm=,args= -g "$host" | cut -c1-80 | tr '\n' ';')"
kill -"$sig" -- -"$host"
wait "$host"; rc=$?
echo "paddock run exit code: $rc"
jq -c 'select(.type=="outcome") | .outcome | {status, reason, signal, exitCode}' "$DATA/out.ndjson"
tail -3 "$DATA/err.log"
ids=$(run_ids "$DATA/out.ndjson")
report_leftovers "after the group $sig" $ids
"${PADDOCK[@]}" runs show $ids --json 2>/dev/null | jq -c '{status: (.run.status // .status)}' 2>/dev/null
[ "${KEEP:-0}" = 1 ] || cleanup_ids $ids
