# Shared helpers for the runner-spawner attack scripts (bash). Source it; needs root, cgroups, bwrap.
# Every leftover check looks only at this attack's own markers (sleep 999xx) and its own run ids, so runs of
# other paddock processes on the machine are never touched.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
ATTACK="$ROOT/test/attacks/spawner"
PADDOCK=(node "$ROOT/bin/paddock.js")
export PADDOCK_RUNNER_DIRS="$ATTACK"
export PADDOCK_LOG_LEVEL=${PADDOCK_LOG_LEVEL:-warn}

fresh() { # fresh <name>: a new data folder in $DATA
  DATA="/tmp/pa-attack/$1"
  if [ -d "$DATA" ]; then "${PADDOCK[@]}" runs list --data-dir "$DATA" >/dev/null 2>&1; umount_data; rm -rf "$DATA"; fi
  mkdir -p "$DATA"
  chmod 755 /tmp/pa-attack
  export PADDOCK_HOME="$DATA"
}
umount_data() { grep " $DATA/" /proc/mounts | awk '{print $2}' | while read -r m; do umount -l "$m"; done; }

wait_for() { # wait_for <file> <regex> <seconds>
  local i=0
  while ! grep -qE "$2" "$1" 2>/dev/null; do
    sleep 0.1; i=$((i + 1))
    if [ $i -gt $(($3 * 10)) ]; then echo "TIMEOUT waiting for /$2/ in $1" >&2; return 1; fi
  done
}
run_ids() { grep -ohE 'run_[A-Za-z0-9_-]+' "$@" 2>/dev/null | sort -u; }
children() { ps -o pid= --ppid "$1" | tr -d ' '; }
spawner_of() { # the runner spawner among a host's children: `node -e` with the program that holds runs
  local p
  for p in $(children "$1"); do
    if tr '\0' ' ' </proc/$p/cmdline 2>/dev/null | grep -q 'cgroup'; then echo "$p"; fi
  done
}
markers() { pgrep -f '^(/bin/)?sleep 999[0-9][0-9]$|sleep 999[0-9][0-9]"' | grep -v "^$$\$" || true; }
procs_with_env() { # pids whose environ holds PADDOCK_RUN_ID=<one of the given ids>
  python3 - "$@" <<'PY'
import os, sys
want = {b"PADDOCK_RUN_ID=" + a.encode() for a in sys.argv[1:]}
for p in os.listdir("/proc"):
    if not p.isdigit():
        continue
    try:
        env = open(f"/proc/{p}/environ", "rb").read().split(b"\0")
    except OSError:
        continue
    if want.intersection(env):
        print(p)
PY
}
cgroups_of() { # cgroup directories named by the given ids, anywhere under /sys/fs/cgroup
  local id
  for id in "$@"; do find /sys/fs/cgroup -maxdepth 6 -type d -name "$id*" 2>/dev/null; done | sort -u
}
report_leftovers() { # report_leftovers <label> <ids...>: processes, cgroups, mounts, workspaces
  local label=$1; shift
  local m e c mnt ws
  m=$(markers | tr '\n' ' ')
  e=$(procs_with_env "$@" | tr '\n' ' ')
  c=$(cgroups_of "$@" | tr '\n' ' ')
  mnt=$(grep -c " $DATA/" /proc/mounts)
  ws=$(ls "$DATA/workspaces" 2>/dev/null | tr '\n' ' ')
  echo "[$label] marker procs: ${m:-none}"
  for p in $m; do
    echo "    $p $(tr '\0' ' ' </proc/$p/cmdline 2>/dev/null) state=$(awk '{print $3}' /proc/$p/stat 2>/dev/null)" \
      "cg=$(grep '^0::' /proc/$p/cgroup 2>/dev/null)"
  done
  echo "[$label] procs with the runs' PADDOCK_RUN_ID: ${e:-none}"
  for p in $e; do echo "    $p $(tr '\0' ' ' </proc/$p/cmdline 2>/dev/null | cut -c1-100)"; done
  echo "[$label] cgroup dirs: ${c:-none}"
  echo "[$label] mounts under the data folder: $mnt; workspaces: ${ws:-none}"
}
kill_markers() { local p; for p in $(markers); do kill -9 "$p" 2>/dev/null; done; }
cleanup_ids() { # after an attack: kill what is left of these runs (ours only) and remove their cgroups
  local p c
  kill_markers
  for p in $(procs_with_env "$@"); do kill -9 "$p" 2>/dev/null; done
  sleep 0.5
  for c in $(cgroups_of "$@" | sort -r); do
    [ -f "$c/cgroup.kill" ] && echo 1 >"$c/cgroup.kill" 2>/dev/null
    find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null
  done
}

apply_config() { sed "s#@ATTACK@#$ATTACK#g" "$ATTACK/config.yaml.in" >"$DATA/paddock.yaml" && "${PADDOCK[@]}" \
    apply -f "$DATA/paddock.yaml" >/dev/null; }
event_json() { # event_json <bot> <text>: a ChatEvent for the attack bindings
  local f='{"id":"atk-%s-%s","platform":"attack","bot":"%s","conversation":{"type":"private","id":"c%s"},'
  f+='"sender":{"id":"1","name":"atk"},"message":{"parts":[{"type":"text","text":"%s"}]},'
  f+='"receivedAt":"2026-12-02T15:00:00Z"}\n'
  printf "$f" \
    "$(date +%s%N)" "$RANDOM" "$1" "$RANDOM" "$2"
}

start_serve() { # start_serve [extra serve args...]: a paddock serve on a free loopback port; sets SERVE, URL, TOKEN
  PORT=$((18000 + RANDOM % 2000))
  URL="http://127.0.0.1:$PORT"
  "${PADDOCK[@]}" serve --listen "127.0.0.1:$PORT" "$@" >"$DATA/serve.out" 2>"$DATA/serve.err" &
  SERVE=$!
  wait_for "$DATA/serve.err" 'listening on' 60 || { cat "$DATA/serve.err"; return 1; }
  TOKEN=$("${PADDOCK[@]}" tokens create --tenant default --role platform --name "atk$RANDOM" | tail -1)
}
post_event() { # post_event <bot> <text>: prints the run id
  event_json "$1" "$2" | curl -s -X POST "$URL/v1/events" -H "authorization: Bearer $TOKEN" \
    -H 'content-type: application/json' -d @- | jq -r '.runId // .'
}
run_json() { curl -s "$URL/v1/runs/$1" -H "authorization: Bearer $TOKEN"; }
run_status() { run_json "$1" | jq -r '.status // .run.status // .'; }
wait_status() { # wait_status <runId> <regex> <seconds>
  local i=0
  while ! run_status "$1" | grep -qE "$2"; do
    sleep 0.25; i=$((i + 1)); [ $i -gt $(($3 * 4)) ] && { echo "TIMEOUT: $1 is $(run_status "$1")" >&2; return 1; }
  done
}
run_summary() { # status, reason, signal, survivors of a run, from the API
  run_json "$1" | jq -c '(.outcome // .run.outcome // {}) as $o
    | {status: (.status // .run.status), reason: (.reason // $o.reason), signal: ($o.signal),
       survivors: ($o.survivors)}'
}
