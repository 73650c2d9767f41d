#!/bin/bash
# tools/gpu_check.sh end to end with --device=cpu: the pack holds the binary,
# the CUDA support library and what they need except glibc and LibTorch,
# within 64 MiB; run from the pack alone, with only LIBTORCH_DIR and a bare
# environment, every step passes and gpu_check.json says so.
# Usage: gpu_check_test.sh GPU_CHECK TRAIN CUDA_SUPPORT TORCH_DIR_TXT
set -euo pipefail
GPU_CHECK="$1" TRAIN="$2" CUDA_SUPPORT="$3"
LIBTORCH_DIR="$(cat "$4")"
TMP="$(mktemp -d "${TEST_TMPDIR:-/tmp}/gpu_check.XXXXXX")"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$GPU_CHECK" --pack="$TMP/pack" --train="$TRAIN" --cuda_support="$CUDA_SUPPORT"
[ -x "$TMP/pack/train" ] || fail "no train in the pack"
[ -f "$TMP/pack/libcuda_support.so" ] || fail "no CUDA support library in the pack"
[ -f "$TMP/pack/lib/libprotobuf.so.32" ] || fail "protobuf did not travel: $(ls "$TMP/pack/lib")"
if ls "$TMP/pack/lib" | grep -E '^(libtorch|libc10|libc\.so|libcuda)'; then
  fail "LibTorch, CUDA or glibc libraries were packed"
fi
bytes=$(du -sb "$TMP/pack" | awk '{print $1}')
[ "$bytes" -le $((64 * 1024 * 1024)) ] || fail "the pack is $bytes bytes"

# Bad input is refused with a message.
if "$TMP/pack/gpu_check.sh" --device=tpu 2> "$TMP/err"; then fail "--device=tpu accepted"; fi
grep -q "cpu or cuda" "$TMP/err" || fail "no reason for --device=tpu: $(cat "$TMP/err")"
if env -i PATH=/usr/bin:/bin "$TMP/pack/gpu_check.sh" --device=cpu --out="$TMP/x" 2> "$TMP/err"; then
  fail "ran without LIBTORCH_DIR"
fi
grep -q "LIBTORCH_DIR" "$TMP/err" || fail "no reason without LIBTORCH_DIR: $(cat "$TMP/err")"

# The check, from the pack alone: no runfiles, no Bazel, no inherited
# library path.
env -i PATH=/usr/bin:/bin HOME="$TMP" LIBTORCH_DIR="$LIBTORCH_DIR" \
    "$TMP/pack/gpu_check.sh" --device=cpu --out="$TMP/out" > "$TMP/stdout" \
    || fail "the check failed: $(tail -c 3000 "$TMP/stdout")"

/usr/bin/python3 - "$TMP/out/gpu_check.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
assert s["pass"] is True, s
assert s["device"] == "cpu", s["device"]
steps = {x["name"]: x for x in s["steps"]}
assert list(steps) == ["reference", "gloo_two_ranks", "nccl_refused"], list(steps)
assert all(x["pass"] for x in steps.values()), steps
assert steps["gloo_two_ranks"]["parity_pass"] is True, steps["gloo_two_ranks"]
assert steps["gloo_two_ranks"]["parity_world_size"] == 2
assert "needs a GPU" in steps["nccl_refused"]["message"], steps["nccl_refused"]
assert steps["nccl_refused"]["exit_code"] == 2
platform = steps["reference"]["platform"]
assert platform["libtorch_version"] == "2.11.0", platform
assert platform["device"] == "cpu", platform
assert s["reference_repeatable"]["bitwise_equal"] is True, s["reference_repeatable"]
assert "gpu_vs_cpu" not in s
print("gpu_check.json: every verdict passes")
PY
echo PASS
