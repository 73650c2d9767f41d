#!/usr/bin/env bash
# The GPU proof, ready to carry to a machine with a GPU.
#
# On a build machine (this repository):
#   tools/gpu_check.sh --pack=DIR [--train=PATH --cuda_support=PATH]
#       builds //trainer:train and //runtime:libcuda_support.so (unless
#       given) and packs them with every shared library they need that is
#       neither glibc nor LibTorch/CUDA into DIR (at most 64 MiB), with this
#       script and its config.
#   tools/gpu_check.sh --device=cpu|cuda [--out=DIR]
#       packs into a temporary folder and runs the check from there.
#
# On the machine with the GPU (no build tools; LibTorch 2.11 installed):
#   LIBTORCH_DIR=/path/to/site-packages/torch DIR/gpu_check.sh --device=cuda [--out=OUT]
#       runs, from the pack alone:
#         reference       the one-worker reference on the device;
#         gloo_two_ranks  two ranks on that one device over Gloo (CUDA
#                         tensors on a GPU), with parity against its reference;
#         nccl_one_rank   one rank over NCCL, with parity (it proves the NCCL
#                         wiring only: NCCL needs a GPU per rank, and the
#                         machine has one);
#         cpu_reference   the same reference on the CPU, to measure what a
#                         GPU run differs from a CPU reference by;
#       with --device=cpu the NCCL step is replaced by nccl_refused: the NCCL
#       config must be refused at load (exit 2) because no GPU is visible.
#       Writes OUT/gpu_check.json (figures and verdicts; tools/gpu_check/
#       summarize.py) and exits 0 when every verdict passes.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
PACK_LIMIT_BYTES=$((64 * 1024 * 1024))

usage() { sed -n '2,30p' "$0" >&2; exit 2; }
die() { echo "gpu_check: $*" >&2; exit 2; }

# Libraries that come from the target machine: glibc's, and LibTorch's with
# the CUDA libraries it brings.
is_target_library() {
  case "$(basename "$1")" in
    ld-linux*|libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|libresolv.so*) return 0 ;;
    libtorch*|libc10*|libgomp*|libcu*|libnv*|libnccl*|libcaffe2*|libshm*) return 0 ;;
  esac
  return 1
}

# Shared libraries `binary` needs, resolved here, that must travel with it.
travelling_libraries() {
  ldd "$1" | awk '/=> \// { print $3 }' | while read -r lib; do
    is_target_library "$lib" || echo "$lib"
  done
}

pack() {
  local dir="$1" train="$2" cuda_support="$3"
  mkdir -p "$dir/lib" "$dir/lib-fallback" "$dir/gpu_check"
  cp -f "$train" "$dir/train"
  cp -f "$cuda_support" "$dir/libcuda_support.so"
  chmod u+w "$dir/train" "$dir/libcuda_support.so"
  cp -f "$HERE/gpu_check.sh" "$dir/gpu_check.sh"
  cp -f "$HERE/gpu_check/base.pbtxt" "$HERE/gpu_check/summarize.py" "$dir/gpu_check/"
  local lib
  for lib in $( (travelling_libraries "$train"; travelling_libraries "$cuda_support") | sort -u); do
    case "$(basename "$lib")" in
      # The target's own C++ runtime is used unless it is too old
      # (lib-fallback, chosen at run time).
      libstdc++.so*|libgcc_s.so*) cp -fL "$lib" "$dir/lib-fallback/" ;;
      *) cp -fL "$lib" "$dir/lib/" ;;
    esac
  done
  local bytes
  bytes=$(du -sb "$dir" | awk '{print $1}')
  if [ "$bytes" -gt "$PACK_LIMIT_BYTES" ]; then
    die "the pack in $dir is $bytes bytes, over the 64 MiB a GPU machine takes"
  fi
  echo "gpu_check: packed $(ls "$dir/lib" | wc -l) libraries, $bytes bytes, into $dir"
}

build_and_pack() {
  local dir="$1" train="$2" cuda_support="$3"
  if [ -z "$train" ] || [ -z "$cuda_support" ]; then
    local root
    root="$(cd "$HERE/.." && pwd)"
    (cd "$root" && bazel build //trainer:train //runtime:libcuda_support.so >&2)
    train="${train:-$root/bazel-bin/trainer/train}"
    cuda_support="${cuda_support:-$root/bazel-bin/runtime/libcuda_support.so}"
  fi
  [ -x "$train" ] || die "--train=$train is not an executable"
  [ -f "$cuda_support" ] || die "--cuda_support=$cuda_support does not exist"
  pack "$dir" "$train" "$cuda_support"
}

# The target's libstdc++ must have what the binary was linked against
# (GCC 12's GLIBCXX_3.4.30); else the packed one is used.
library_path() {
  local path="$HERE/lib:$LIBTORCH_DIR/lib" nvidia
  for nvidia in "$LIBTORCH_DIR"/../nvidia/*/lib; do
    [ -d "$nvidia" ] && path="$path:$nvidia"
  done
  local system_cxx
  system_cxx=$(ldconfig -p 2>/dev/null | awk '/libstdc\+\+\.so\.6 .*x86-64/ { print $NF; exit }')
  if [ -z "$system_cxx" ] || ! grep -qa GLIBCXX_3.4.30 "$system_cxx"; then
    path="$path:$HERE/lib-fallback"
  fi
  echo "$path"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# config NAME WORLD DEVICE BACKEND: the base config with those appended.
config() {
  local path="$OUT/$1.pbtxt"
  { cat "$HERE/gpu_check/base.pbtxt"
    echo "world_size: $2"
    echo "device: \"$3\""
    echo "backend: \"$4\""; } > "$path"
  echo "$path"
}

# step NAME KIND ENV... -- ARGS...: runs the packed train, records the exit
# code and the seconds in steps.tsv, keeps its stderr.
step() {
  local name="$1" kind="$2"; shift 2
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  mkdir -p "$OUT/$name"
  local start code=0 end
  start=$(date +%s.%N)
  env ${envs[@]+"${envs[@]}"} LD_LIBRARY_PATH="$LIBRARY_PATH" "$HERE/train" "$@" \
      --out="$OUT/$name" > "$OUT/$name/stdout.txt" 2> "$OUT/$name/stderr.txt" || code=$?
  end=$(date +%s.%N)
  printf '%s\t%s\t%s\t%s\n' "$name" "$code" \
      "$(python3 -c "print(round($end - $start, 2))")" "$kind" >> "$OUT/steps.tsv"
  echo "gpu_check: $name exited $code" >&2
}

run_check() {
  local device="$1"
  [ -x "$HERE/train" ] || die "no packed train beside $0: run tools/gpu_check.sh --pack=DIR first"
  [ -n "${LIBTORCH_DIR:-}" ] || die "set LIBTORCH_DIR to LibTorch 2.11's torch/ folder (site-packages/torch)"
  [ -f "$LIBTORCH_DIR/lib/libtorch_cpu.so" ] || die "LIBTORCH_DIR=$LIBTORCH_DIR has no lib/libtorch_cpu.so"
  mkdir -p "$OUT"
  : > "$OUT/steps.tsv"
  LIBRARY_PATH="$(library_path)"
  step reference reference -- --config="$(config reference 1 "$device" gloo)"
  step gloo_two_ranks parity -- --config="$(config gloo_two_ranks 2 "$device" gloo)"
  local nccl_config one_rank
  nccl_config="$(config nccl_one_rank 1 cuda nccl)"
  one_rank=(RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1
            MASTER_PORT="$(free_port)")
  if [ "$device" = cuda ]; then
    step nccl_one_rank parity "${one_rank[@]}" -- --config="$nccl_config"
    step cpu_reference reference -- --config="$(config cpu_reference 1 cpu gloo)"
  else
    step nccl_refused refusal "${one_rank[@]}" -- --config="$nccl_config"
  fi
  python3 "$HERE/gpu_check/summarize.py" "$OUT" "$device" "$LIBTORCH_DIR"
}

main() {
  local pack_dir="" train="" cuda_support="" device="" out=""
  for arg in "$@"; do
    case "$arg" in
      --pack=*) pack_dir="${arg#--pack=}" ;;
      --train=*) train="${arg#--train=}" ;;
      --cuda_support=*) cuda_support="${arg#--cuda_support=}" ;;
      --device=cpu|--device=cuda) device="${arg#--device=}" ;;
      --device=*) die "--device is cpu or cuda, got '${arg#--device=}'" ;;
      --out=*) out="${arg#--out=}" ;;
      *) usage ;;
    esac
  done
  if [ -n "$pack_dir" ]; then
    build_and_pack "$pack_dir" "$train" "$cuda_support"
    return
  fi
  [ -n "$device" ] || usage
  OUT="$(mkdir -p "${out:-gpu_check_out}" && cd "${out:-gpu_check_out}" && pwd)"
  if [ -x "$HERE/train" ]; then
    run_check "$device"
    return
  fi
  # From the repository: pack into a temporary folder and run from there.
  local tmp
  tmp="$(mktemp -d)"
  build_and_pack "$tmp/pack" "$train" "$cuda_support" >&2
  if [ -z "${LIBTORCH_DIR:-}" ]; then
    LIBTORCH_DIR="$(cat "$(cd "$HERE/.." && bazel info output_base)/external/libtorch/torch_dir.txt")"
  fi
  LIBTORCH_DIR="$LIBTORCH_DIR" "$tmp/pack/gpu_check.sh" --device="$device" --out="$OUT"
}

main "$@"
