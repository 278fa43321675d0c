#!/usr/bin/env bash
# A07 (bwrap): one run parks N sleepers with ~K KB of environment each. Every run's end (and recovery) scans /proc for
# processes carrying the ended run's PADDOCK_RUN_ID (docs/state.md "Escapees"): does the attacker's environment make
# every other run's end, and the host's event loop, slower?
# Usage: a07_environ_scan.sh [sleepers] [KB each] [probes]
source "$(dirname "$0")/lib.sh"
n=${1:-400}; kb=${2:-1000}; probes=${3:-5}
fresh a07
apply_config
start_serve || exit 1
health_max() { # sample /healthz every 50 ms while $1 (a pid) lives; print the slowest answer in ms
  local max=0 t
  while kill -0 "$1" 2>/dev/null; do
    t=$(curl -s -o /dev/null -w '%{time_total}' "$URL/healthz" | awk '{print int($1*1000)}')
    [ "$t" -gt "$max" ] && max=$t; sleep 0.05
  done; echo "$max"
}
probe() {
  local t0 t1 r hp
  t0=$(date +%s%N); r=$(post_event victim "info")
  ( wait_status "$r" 'completed|failed|crashed|timed_out|cancelled' 120 ) & local w=$!
  hp=$(health_max $w)
  t1=$(date +%s%N); st=$(run_summary "$r" | jq -c '{status}')
  echo "  probe $r: $st $(( (t1 - t0) / 1000000 )) ms, slowest /healthz ~${hp} ms"
}
echo "alone:"; for i in $(seq 1 "$probes"); do probe; done
atk=$(post_event bwrap "bigenv:$n,$kb hold:300")
echo "attacker (bwrap): $atk"
sleep 10
echo "attacker's sleepers: $(pgrep -fc '^/bin/sleep 99941')"
echo "beside $n sleepers x $kb KB of environment:"; for i in $(seq 1 "$probes"); do probe; done
curl -s -X POST "$URL/v1/runs/$atk/cancel" -H "authorization: Bearer $TOKEN" -H \
    'content-type: application/json' -d '{}' >/dev/null
t0=$(date +%s%N)
wait_status "$atk" 'completed|failed|crashed|timed_out|cancelled' 60
echo "attacker: $(run_summary "$atk") (cancel to end: $(( ($(date +%s%N) - t0) / 1000000 )) ms)"
kill -TERM "$SERVE"; wait "$SERVE"
cleanup_ids "$atk"
