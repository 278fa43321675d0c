#!/usr/bin/env bash
# As root, the bwrap backend runs each sandbox as a dedicated unprivileged host uid (docs/admin-guide.md,
# "Run identity"), and bwrap resolves every bound path as that uid: it must be able to search every folder
# above this package (the runner folders, node_modules and the harness CLIs are bound from here). A clone
# under /root (mode 0700) is not reachable, so every sandboxed run would fail. This grants that one uid
# search-only access (an ACL entry `u:<uid>:x`, nothing listable, nothing for anyone else) on each folder
# above the package that it cannot search, and says which. Nothing to do when paddock does not run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || exit 0
ids=$(node bin/paddock.js doctor --json 2>/dev/null | node -e '
  const j = JSON.parse(require("fs").readFileSync(0, "utf8")).machine.identity;
  if (j.mechanism === "dedicated") console.log(`${j.uid} ${j.gid}`);') ||
  { echo "setup: WARNING: could not read the run identity from paddock doctor" >&2; exit 0; }
[ -n "$ids" ] || exit 0
read -r uid gid <<<"$ids"
dirs=()
d=$(pwd -P)
while :; do dirs=("$d" "${dirs[@]}"); [ "$d" = / ] && break; d=$(dirname "$d"); done
for dir in "${dirs[@]}"; do
  if ! setpriv --reuid="$uid" --regid="$gid" --clear-groups test -x "$dir" 2>/dev/null; then
    if ! command -v setfacl >/dev/null 2>&1; then
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends acl >/dev/null 2>&1 ||
        { DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
          DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends acl >/dev/null; }
    fi
    setfacl -m "u:${uid}:x" "$dir"
    echo "setup: run identity: granted uid ${uid} search (x) on ${dir} so sandboxed runs can reach this package" \
      "(docs/admin-guide.md \"Run identity\")"
  fi
done
