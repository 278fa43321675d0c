#!/usr/bin/env bash
# A12: what a runner inherits while another run is live (descriptors, environment), and what doctor/explain claim on
# this machine (a hybrid cgroup v1 + v2 layout) about the kill and the limits, to compare with A04's results.
source "$(dirname "$0")/lib.sh"
fresh a12
apply_config
"${PADDOCK[@]}" doctor 2>&1 | grep -iE 'cgroup|kill|pids|memory|freezer|setsid' | head -20
echo "--- explain atk-proc (kill / cgroup lines)"
"${PADDOCK[@]}" explain atk-proc 2>&1 | grep -iE 'kill|cgroup|setsid|escap|NOT' | head -20
start_serve || exit 1
a=$(post_event victim "hold:20"); wait_status "$a" running 30
b=$(post_event victim "info"); wait_status "$b" 'completed|failed|crashed' 60
c=$(post_event proc "info"); wait_status "$c" 'completed|failed|crashed' 60
for r in "$b" "$c"; do
  echo "--- $r"
  curl -s --max-time 5 "$URL/v1/runs/$r/events" -H "authorization: Bearer $TOKEN" | grep -oE \
    '(fds|cgroup|chain)[^"]*' | sed 's/\\n/\n    /g' | head -30
done
curl -s -X POST "$URL/v1/runs/$a/cancel" -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' \
    -d '{}' >/dev/null
wait_status "$a" 'cancelled|completed|crashed' 30
kill -TERM "$SERVE"; wait "$SERVE"
