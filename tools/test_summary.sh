#!/usr/bin/env bash
# Counts a `bazel test` run for test.sh: passed, failed and skipped targets.
# A skip is not a pass: a target that PASSED but whose own log says it
# skipped (a line "SKIPPED: why", GoogleTest's "[  SKIPPED ]", unittest's
# "OK (skipped=N)") is counted as skipped and listed by name with the line
# that says so. With CI=true only a skip for hardware the machine lacks (a
# reason saying "needs a GPU") is allowed; any other skip is counted as
# failed (a fresh machine after tools/install_deps.sh has everything else).
# A skip's reason is the rest of a "SKIPPED: " line or, for GoogleTest, the
# line after "file:line: Skipped"; a log is a GPU skip only when it gives at
# least one reason and every reason it gives says "needs a GPU".
#
# Usage: test_summary.sh BAZEL_OUTPUT TESTLOGS_DIR
# Prints a line per skipped target, then "counts P F K" last; exits 1 when
# a skip was counted as failed.
set -uo pipefail
output="$1"
testlogs="$2"
passed=$(grep -cE '^//[^ ]+ +PASSED' "$output")
failed=$(grep -cE '^//[^ ]+ +(FAILED|TIMEOUT|NO STATUS|INCOMPLETE|FLAKY|FAILED TO BUILD)' "$output")
skipped=0
refused=0
for target in $(grep -oE '^//[^ ]+ +PASSED' "$output" | awk '{print $1}'); do
  target_log="$testlogs/$(echo "${target#//}" | tr ':' '/')/test.log"
  [ -f "$target_log" ] || continue
  why=$(grep -m1 -E '^SKIPPED: |\[  SKIPPED \]|^OK \(skipped=' "$target_log")
  [ -n "$why" ] || continue
  passed=$((passed - 1))
  reasons=$(awk '/^SKIPPED: /{print substr($0, 10)} after{print; after=0} /: Skipped$/{after=1}' "$target_log")
  gpu_only=0
  if [ -n "$reasons" ] && ! grep -qv 'needs a GPU' <<< "$reasons"; then
    gpu_only=1
    [[ "$why" == *"needs a GPU"* ]] || why="$why ($(head -1 <<< "$reasons"))"
  fi
  if [ "${CI:-}" = "true" ] && [ "$gpu_only" -eq 0 ]; then
    echo "$target SKIPPED, which CI does not allow: $why"
    failed=$((failed + 1))
    refused=1
  else
    echo "$target SKIPPED: $why"
    skipped=$((skipped + 1))
  fi
done
echo "counts $passed $failed $skipped"
exit "$refused"
