#!/usr/bin/env bash
# A10: `paddock serve` stopped the way a service manager stops a unit: SIGTERM to every process of its group (the host
# and its two helpers). Expected (README, http-api.md): SIGTERM drains the runs the server holds (--on-stop drain): a
# running run finishes. Compare with SIGTERM to the host process alone.
# Usage: a10_serve_group_term.sh [group|host] [TERM|INT]
source "$(dirname "$0")/lib.sh"
who=${1:-group}; sig=${2:-TERM}
fresh "a10-$who-$sig"
apply_config
PORT=$((18000 + RANDOM % 2000)); URL="http://127.0.0.1:$PORT"
setsid "${PADDOCK[@]}" serve --listen "127.0.0.1:$PORT" --on-stop drain --drain-timeout 30000 \
    >"$DATA/serve.out" 2>"$DATA/serve.err" &
SERVE=$!
wait_for "$DATA/serve.err" 'listening on' 60 || exit 1
TOKEN=$("${PADDOCK[@]}" tokens create --tenant default --role platform --name atk | tail -1)
r1=$(post_event proc "hold:6"); r2=$(post_event victim "hold:6")
wait_status "$r1" running 30; wait_status "$r2" running 30
sleep 1
if [ "$who" = group ]; then kill -"$sig" -- -"$SERVE"; else kill -"$sig" "$SERVE"; fi
wait "$SERVE"; echo "serve exit code $?"
tail -3 "$DATA/serve.err"
"${PADDOCK[@]}" runs show "$r1" --json 2>/dev/null | jq -c \
    '{run: .run.id, status: (.run.status // .status), reason: (.run.outcome.reason // .outcome.reason)}'
"${PADDOCK[@]}" runs show "$r2" --json 2>/dev/null | jq -c \
    '{run: .run.id, status: (.run.status // .status), reason: (.run.outcome.reason // .outcome.reason)}'
report_leftovers "after the stop" "$r1" "$r2"
[ "${KEEP:-0}" = 1 ] || cleanup_ids "$r1" "$r2"
