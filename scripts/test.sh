#!/usr/bin/env bash
# The test command (npm test): set-up, typecheck, protocol and OpenAPI staleness checks, lint, format check,
# every vitest project.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
npm run --silent typecheck || exit 1
npm run --silent protocol:check || exit 1
npm run --silent openapi:check || exit 1
npm run --silent lint || exit 1
npm run --silent format:check || exit 1
results=.vitest-results.json
rm -f "$results"
npx vitest run --reporter=default --reporter=json --outputFile.json="$results"
status=$?
node scripts/testSummary.mjs "$results" || status=1
exit $status
