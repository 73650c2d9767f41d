#!/usr/bin/env bash
# Installs what is missing (Debian 12), builds, and runs every test with
# `bazel test //...`, then the layering test over the real build graph
# (tools/layering_test.sh: bazel query cannot run inside a Bazel test).
# The last line is "N passed, M failed, K skipped" (test targets, and the
# layering test); the exit code is non-zero on any failure. A skip is not a
# pass: tools/test_summary.sh counts and lists the targets that skipped,
# and under CI=true (.ci/run) fails any skip but for a GPU the machine lacks.
set -uo pipefail
cd "$(dirname "$0")"
tools/install_deps.sh || { echo "0 passed, 1 failed, 0 skipped"; exit 1; }

log=$(mktemp)
# --nocache_test_results: a cached PASSED would hide a rerun.
bazel test //... --nocache_test_results "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
summary=$(tools/test_summary.sh "$log" "$(bazel info bazel-testlogs 2>/dev/null)")
[ $? -eq 0 ] || status=1
rm -f "$log"
echo "$summary" | grep -v '^counts '
read -r _ passed failed skipped <<<"$(echo "$summary" | grep '^counts ')"
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
echo "${passed} passed, ${failed} failed, ${skipped} skipped"
[ "$status" -eq 0 ] && [ "$failed" -eq 0 ]
