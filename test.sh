#!/usr/bin/env bash
# Installs what is missing (Debian 12), builds, and runs every test with
# `bazel test //...`, then the layering test over the real build graph
# (tools/layering_test.sh: bazel query cannot run inside a Bazel test).
# The last line is "N passed, M failed" (test targets, and the layering
# test); the exit code is non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")"
tools/install_deps.sh || { echo "0 passed, 1 failed"; exit 1; }

log=$(mktemp)
# --nocache_test_results: a cached PASSED would hide a rerun.
bazel test //... --nocache_test_results "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
passed=$(grep -cE '^//[^ ]+ +PASSED' "$log")
failed=$(grep -cE '^//[^ ]+ +(FAILED|TIMEOUT|NO STATUS|INCOMPLETE|FLAKY|FAILED TO BUILD)' "$log")
rm -f "$log"
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
  failed=1  # the build itself failed before any test ran
fi
if tools/layering_test.sh; then
  echo "tools/layering_test.sh PASSED"
  passed=$((passed + 1))
else
  echo "tools/layering_test.sh FAILED"
  failed=$((failed + 1))
  status=1
fi
echo "${passed} passed, ${failed} failed"
[ "$status" -eq 0 ] && [ "$failed" -eq 0 ]
