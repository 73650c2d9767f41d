#!/usr/bin/env bash
# tools/test_summary.sh on a made-up bazel output and test logs: a skip is
# counted as skipped, not passed, and listed; under CI=true only a GPU skip
# is allowed; failures and timeouts are failures.
set -uo pipefail
SUMMARY="$1"
tmp=$(mktemp -d "${TEST_TMPDIR:-/tmp}/summary.XXXXXX")
mkdir -p "$tmp/logs/pkg/plain" "$tmp/logs/pkg/slurm" "$tmp/logs/pkg/gtest" "$tmp/logs/pkg/gpu" \
         "$tmp/logs/pkg/unit" "$tmp/logs/pkg/gtest_gpu" "$tmp/logs/pkg/gtest_mixed"
echo "all good" > "$tmp/logs/pkg/plain/test.log"
printf 'starting\nSKIPPED: Slurm could not start here: no munge\n' > "$tmp/logs/pkg/slurm/test.log"
printf '[  SKIPPED ] Mpi.Stage\n' > "$tmp/logs/pkg/gtest/test.log"
printf 'SKIPPED: needs a GPU (none here)\n' > "$tmp/logs/pkg/gpu/test.log"
printf 'OK (skipped=1)\n' > "$tmp/logs/pkg/unit/test.log"
# GoogleTest's own layout: the reason on the line after "file:line: Skipped".
printf '[ RUN      ] D.Nccl\nconfig/d.cc:86: Skipped\nneeds a GPU\n\n[  SKIPPED ] D.Nccl (0 ms)\n' \
  > "$tmp/logs/pkg/gtest_gpu/test.log"
printf 'd.cc:86: Skipped\nneeds a GPU\n[  SKIPPED ] D.Nccl (0 ms)\nd.cc:90: Skipped\nno mpirun\n[  SKIPPED ] D.Mpi (0 ms)\n' \
  > "$tmp/logs/pkg/gtest_mixed/test.log"
cat > "$tmp/output" <<'OUT'
//pkg:plain                 PASSED in 0.1s
//pkg:slurm                 PASSED in 0.1s
//pkg:gtest                 PASSED in 0.1s
//pkg:gpu                   PASSED in 0.1s
//pkg:unit                  PASSED in 0.1s
//pkg:gtest_gpu             PASSED in 0.1s
//pkg:gtest_mixed           PASSED in 0.1s
//pkg:broken                FAILED in 0.1s
//pkg:slow                  TIMEOUT in 300.0s
OUT
fail() { echo "FAIL: $*"; exit 1; }

out=$(CI= "$SUMMARY" "$tmp/output" "$tmp/logs") || fail "exit $? off CI"
[[ "$out" == *"counts 1 2 6"* ]] || fail "off CI: $out"
[[ "$out" == *"//pkg:slurm SKIPPED: SKIPPED: Slurm could not start here"* ]] || fail "slurm: $out"
[[ "$out" == *"//pkg:gtest SKIPPED: [  SKIPPED ] Mpi.Stage"* ]] || fail "gtest: $out"
[[ "$out" == *"//pkg:unit SKIPPED: OK (skipped=1)"* ]] || fail "unittest: $out"
[[ "$out" != *"//pkg:plain SKIPPED"* ]] || fail "plain: $out"

out=$(CI=true "$SUMMARY" "$tmp/output" "$tmp/logs")
code=$?
[ "$code" -eq 1 ] || fail "CI: exit $code"
[[ "$out" == *"counts 1 6 2"* ]] || fail "CI: $out"
[[ "$out" == *"//pkg:gpu SKIPPED: SKIPPED: needs a GPU"* ]] || fail "CI gpu: $out"
[[ "$out" == *"//pkg:slurm SKIPPED, which CI does not allow"* ]] || fail "CI slurm: $out"
[[ "$out" == *"//pkg:gtest_gpu SKIPPED: [  SKIPPED ] D.Nccl (0 ms) (needs a GPU)"* ]] || fail "CI gtest gpu: $out"
[[ "$out" == *"//pkg:gtest_mixed SKIPPED, which CI does not allow"* ]] || fail "CI gtest mixed: $out"
echo "PASS"
