#!/usr/bin/env bash
# The layering test on the real build: bazel query's graph of every rule
# and the tree's includes, against the floors of tools/layers.txt
# (tools/layering_check.py). Run from the workspace root; ./test.sh runs it
# after `bazel test` (a test inside Bazel's sandbox cannot run bazel query).
set -uo pipefail
cd "$(dirname "$0")/.."
graph=$(mktemp)
trap 'rm -f "$graph"' EXIT
if ! bazel query --noimplicit_deps --output=xml 'kind(rule, //...)' > "$graph" 2> "$graph.err"; then
  cat "$graph.err" >&2
  rm -f "$graph.err"
  echo "layering: bazel query failed" >&2
  exit 1
fi
rm -f "$graph.err"
python3 tools/layering_check.py tools/layers.txt "$graph" .
