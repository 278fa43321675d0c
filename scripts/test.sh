#!/usr/bin/env bash
# The test command (npm test): set-up, then typecheck, protocol and OpenAPI staleness checks, lint and format check
# side by side, then every vitest project.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
# The five checks read the sources and write nothing, each a single-threaded process: run together they fill both
# cores of a 2-core machine (≈ half the wall time of one after another). Each one's output is shown whole, in this
# order, after all have ended; any failure fails the command, as before.
checks=(typecheck protocol:check openapi:check lint format:check)
logs=$(mktemp -d)
pids=()
for check in "${checks[@]}"; do
  npm run --silent "$check" >"$logs/$check.log" 2>&1 &
  pids+=($!)
done
failed=0
for i in "${!checks[@]}"; do
  wait "${pids[$i]}" || {
    failed=1
    echo "npm test: '${checks[$i]}' failed:" >&2
  }
  cat "$logs/${checks[$i]}.log"
done
rm -rf "$logs"
[ $failed = 0 ] || exit 1
results=.vitest-results.json
rm -f "$results"
npx vitest run --reporter=default --reporter=json --outputFile.json="$results"
status=$?
node scripts/testSummary.mjs "$results" || status=1
exit $status
