#!/usr/bin/env bash
# A04 (process backend, the host user's rights): a runner that makes a child cgroup inside its own run cgroup (it does
# not leave it) in the unified hierarchy and in each v1 one, and parks a setsid `env -i` daemon in the unified child;
# and one daemon that leaves only the unified (kill) cgroup, staying in the run's v1 limit cgroups.
# Expected (docs/state.md "Run cgroups", admin-guide "Run cgroups live under … and are removed at run end"): the run's
# cgroup is emptied (cgroup.kill reaches children) and removed; the run says what survived.
source "$(dirname "$0")/lib.sh"
fresh a04
"${PADDOCK[@]}" run --runner "$ATTACK/runner" --text "info nestcg nestv1 leavekill" --json >"$DATA/out.ndjson" \
    2>"$DATA/err.log"
echo "exit code $?"
ids=$(run_ids "$DATA/out.ndjson")
jq -c 'select(.type=="outcome") | .outcome | {status, reason, survivors}' "$DATA/out.ndjson"
grep -o 'made [^"]*\|nestcg[^"]*\|: E[A-Z]*' "$DATA/out.ndjson" | head
report_leftovers "after the run ended" $ids
"${PADDOCK[@]}" runs list >/dev/null 2>&1
report_leftovers "after the next start" $ids
[ "${KEEP:-0}" = 1 ] || cleanup_ids $ids
