#!/usr/bin/env bash
# Installs the pinned agent CLIs and the ACP adapter (harness/package.json) into .harness/ — about 1.2 GB from the npm
# registry, nothing from elsewhere. Idempotent: skipped while the pins are unchanged and both
# binaries answer --version. Claude Code is pinned explicitly: on Node 20 an unpinned install
# silently picks 2.1.197 (newer versions declare engines.node >= 22 but run: the CLI is native).
set -euo pipefail
cd "$(dirname "$0")/.."

dir=.harness
stamp="$dir/.installed"
want="$(sha256sum harness/package.json | cut -d' ' -f1)"
claude="$dir/node_modules/@anthropic-ai/claude-code/bin/claude.exe"
codex="$dir/node_modules/@openai/codex/bin/codex.js"
acp="$dir/node_modules/@agentclientprotocol/claude-agent-acp/dist/index.js"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f "$acp" ] &&
  "$claude" --version >/dev/null 2>&1 && node "$codex" --version >/dev/null 2>&1; then
  exit 0
fi
mkdir -p "$dir"
cp harness/package.json "$dir/package.json"
echo "harness: installing the pinned Claude Code and Codex CLIs and the Claude ACP adapter into $dir" \
  "(about 1.2 GB from the npm registry; npm's log: $dir/install.log)"
# The install shows its phase, the packages on disk of those it puts there, the bytes so far and the time taken
# (scripts/installHarnesses.ts; tsx is a dev dependency, installed by set-up's npm ci before this runs).
if ! node --import tsx scripts/installHarnesses.ts "$dir"; then
  echo "harness: ERROR: npm install of the pinned CLIs failed; see $dir/install.log:" >&2
  tail -20 "$dir/install.log" >&2
  exit 1
fi
echo "harness: checking that the installed CLIs answer --version"
for check in "$claude --version" "node $codex --version"; do
  if ! $check >/dev/null 2>&1; then
    echo "harness: ERROR: installed, but '$check' does not run; see $dir/install.log" >&2
    exit 1
  fi
done
if [ ! -f "$acp" ]; then
  echo "harness: ERROR: installed, but the ACP adapter $acp is missing; see $dir/install.log" >&2
  exit 1
fi
echo "$want" > "$stamp"
echo "harness: claude $("$claude" --version 2>/dev/null | head -1)," \
  "codex $(node "$codex" --version 2>/dev/null | head -1)"
