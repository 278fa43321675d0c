#!/usr/bin/env bash
# A06 (bwrap): one run forks N busy loops (under its pids limit, RLIMIT_CPU per process). Runs have no CPU share of
# their own (no cpu controller), so the host, the spawner and the neighbours' runners compete with N spinners.
# Does a neighbour run fail, and does the host give up its spawner (which ends every live run, crashed)?
# The whole experiment (serve and everything it starts) is confined to one CPU (a v1 cpu cgroup of our own) so the
# shared machine keeps its other core; the ratio between the spinners and everything else is what a dedicated host sees.
# Usage: a06_cpu_starvation.sh [spinners] [probes]
source "$(dirname "$0")/lib.sh"
n=${1:-400}; probes=${2:-6}
fresh a06
apply_config
CG=/sys/fs/cgroup/cpu/attack-a06
mkdir -p $CG && echo 100000 >$CG/cpu.cfs_period_us && echo 100000 >$CG/cpu.cfs_quota_us
echo $$ >$CG/cgroup.procs
start_serve || exit 1
victim=$(post_event victim "hold:60")
echo "victim (bwrap, hold 60 s): $victim"
wait_status "$victim" running 30
probe() { local t0 t1 r; t0=$(date +%s%N); r=$(post_event victim "info"); wait_status "$r" \
    'completed|failed|crashed|timed_out|cancelled' 120; t1=$(date +%s%N); echo \
    "  probe $r: $(run_summary "$r") $(( (t1 - t0) / 1000000 )) ms"; }
echo "baseline probes:"; probe; probe
atk=$(post_event bwrap "spin:$n hold:100")
echo "attacker (bwrap, $n spinners): $atk"
sleep 8
echo "probes beside the spinners:"; for i in $(seq 1 "$probes"); do probe; done
echo "victim now: $(run_summary "$victim")"
wait_status "$victim" 'completed|failed|crashed|timed_out|cancelled' 90
echo "victim at its end: $(run_summary "$victim")"
curl -s -X POST "$URL/v1/runs/$atk/cancel" -H "authorization: Bearer $TOKEN" -H \
    'content-type: application/json' -d '{}' >/dev/null
wait_status "$atk" 'completed|failed|crashed|timed_out|cancelled' 60
echo "attacker: $(run_summary "$atk")"
grep -iE 'spawner|give|stopped' "$DATA/serve.err" | head -5
kill -TERM "$SERVE"; wait "$SERVE"
echo $$ >/sys/fs/cgroup/cpu/cgroup.procs; rmdir $CG 2>/dev/null
