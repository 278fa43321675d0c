#!/usr/bin/env bash
# Installs everything paddock needs on a fresh machine (Debian 12, Node 20.19+, npm 11).
# Idempotent: skips `npm ci` while package-lock.json is unchanged since the last install.
set -euo pipefail
cd "$(dirname "$0")/.."

node -e 'const [a,b]=process.versions.node.split(".").map(Number); if (a<20||(a===20&&b<19)) { console.error(`paddock needs Node >= 20.19, found ${process.versions.node}`); process.exit(1) }'

stamp=node_modules/.paddock-setup
want="$(sha256sum package-lock.json | cut -d' ' -f1) $(node --version)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "setup: installing npm dependencies (better-sqlite3 compiles from source: about 80 s)"
  npm ci --no-audit --no-fund
  echo "$want" > "$stamp"
fi
