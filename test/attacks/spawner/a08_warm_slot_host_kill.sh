#!/usr/bin/env bash
# A08: a warm slot (process binding, warmPool 1) when its host (paddock serve) is SIGKILLed. Expected (warm-pool.md,
# runner-spawner.md): the spawner kills the slot's group and cgroup; the next host start on the machine (any data
# folder) empties and removes the cgroups of slots whose host is gone; the slot's workspace and quota mount are swept
# by the next start of its data folder.
source "$(dirname "$0")/lib.sh"
fresh a08
apply_config
start_serve || exit 1
r1=$(post_event warm "info")
wait_status "$r1" 'completed|failed|crashed' 60
echo "cold run: $(run_summary "$r1")"
sleep 5   # the pool's fill
slot=$(ls "$DATA/workspaces" | grep '^run_w' | head -1)
echo "slot: ${slot:-none}; its processes: $(procs_with_env "$slot" | tr '\n' ' ')"
echo "slot cgroups: $(cgroups_of "$slot" | tr '\n' ' ')"
echo "mounts: $(grep -c " $DATA/" /proc/mounts)"
kill -9 "$SERVE"; sleep 5
report_leftovers "5 s after the host SIGKILL" "$slot"
other=/tmp/pa-attack/a08-other; mkdir -p $other
"${PADDOCK[@]}" runs list --data-dir "$other" >/dev/null 2>&1
report_leftovers "after a start on ANOTHER data folder" "$slot"
"${PADDOCK[@]}" runs list >/dev/null 2>&1
report_leftovers "after a start on the slot's own data folder" "$slot"
echo "quota images: $(ls "$DATA/quota/workspaces" 2>/dev/null | tr '\n' ' ')"
[ "${KEEP:-0}" = 1 ] || cleanup_ids "$slot" "$r1"
