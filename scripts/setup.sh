#!/usr/bin/env bash
# Installs everything paddock needs on a fresh machine (Debian 12, Node 20.19+, npm 11).
# Idempotent: skips `npm ci` while package-lock.json is unchanged since the last install, and the build while
# no source changed.
set -euo pipefail
cd "$(dirname "$0")/.."

node -e 'const [a,b]=process.versions.node.split(".").map(Number);
if (a<20||(a===20&&b<19)) {
  console.error(`paddock needs Node >= 20.19, found ${process.versions.node}`); process.exit(1) }'

# OS packages for the sandbox: bubblewrap (the bwrap backend) and socat (the in-sandbox end of the
# egress proxy). Installed when missing and we can (root + apt-get); otherwise said plainly: the
# demo runs without them, the sandbox tests fail loudly naming what is missing.
missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v socat >/dev/null 2>&1 || missing+=(socat)
# python3 (>= 3.9) runs examples/python-runner, the runner written from docs/protocol.md alone.
command -v python3 >/dev/null 2>&1 || missing+=(python3)
# cc: better-sqlite3 compiles from source with it, and the fuzz campaign's runner-side bridge is C (fuzz/bridge.c).
command -v cc >/dev/null 2>&1 || missing+=(gcc)
# chromium: the real browser the admin console's tests drive (playwright-core, headless; docs/console.md §6).
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
# PostgreSQL: the second store's tests start a throwaway cluster from its server binaries (scripts/pg-cluster.sh), and
# pg-native's libpq builds against libpq-dev (docs/scale-out.md). No system cluster or service is wanted: the
# distribution's own cluster creation is switched off before the install.
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || missing+=(postgresql)
command -v pg_config >/dev/null 2>&1 || missing+=(libpq-dev)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing ${missing[*]} (apt-get)"
    mkdir -p /etc/postgresql-common/createcluster.d
    echo 'create_main_cluster = false' >/etc/postgresql-common/createcluster.d/paddock-no-main-cluster.conf
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "setup: WARNING: ${missing[*]} not installed and this is not root with apt-get;" \
      "run: sudo apt-get install ${missing[*]}" >&2
  fi
fi

stamp=node_modules/.paddock-setup
want="$(sha256sum package-lock.json | cut -d' ' -f1) $(node --version)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "setup: installing npm dependencies (better-sqlite3 compiles from source: about 80 s)"
  npm ci --no-audit --no-fund
  echo "$want" > "$stamp"
fi

# The host runs from its build (dist/, tsc): compiled when missing or when any source changed since (a content
# hash, about 0.3 s when nothing did), so `npm test` after an edit runs the edited code.
node scripts/build.mjs

# The pinned agent CLIs the harness runners wrap (Claude Code, Codex) and the Claude ACP adapter: about 1.2 GB from
# the npm registry into .harness/, skipped while already installed. Tests and the demo use the real ones.
bash scripts/install-harnesses.sh

# As root, sandboxed runs are a dedicated unprivileged uid that must reach this package (a clone under
# /root could not): grant it search-only access where it lacks it, and say so.
bash scripts/run-identity-access.sh
