#!/usr/bin/env bash
# Installs what the build needs and is missing. Idempotent: when everything
# is there it installs nothing.
#   1. Debian 12 packages (compiler, Bazel, Abseil, protobuf, glog, ...).
#   2. LibTorch 2.11.0: the PyPI torch wheel (CUDA 13.0 build) in a
#      project-owned virtual environment, $RECEIPT_PARITY_TORCH_VENV
#      (default ~/.cache/receipt-parity/torch-2.11.0/venv). Its torch/
#      folder is the project's one LibTorch (C++ headers and libraries) and
#      its python runs the Python cross-checks and the DDP baseline.
#      Bazel finds it through @libtorch (third_party/libtorch_repository.bzl);
#      --repo_env=LIBTORCH_DIR=... points the build at another LibTorch 2.11.
set -euo pipefail

PACKAGES=(
  g++
  bazel-bootstrap      # Bazel 4.2.3
  bazel-rules-java     # rules_java for Bazel offline
  libgloo-dev          # Gloo's headers, which c10d's Gloo header includes and
                       # the torch wheel lacks (headers only: Gloo itself is
                       # inside libtorch_cpu; never link -lgloo)
  libabsl-dev
  libpython3-dev       # Python 3.11 to embed: the python_module model plugin
                       # (model/libpython_support.so)
  libprotobuf-dev
  protobuf-compiler
  libgoogle-glog-dev
  libgflags-dev
  libgtest-dev
  libgmock-dev
  libpng-dev
  libssl-dev           # OpenSSL's libcrypto: the data hash's streamed SHA-1
  zlib1g-dev
  python3-venv         # the torch virtual environment
  iproute2             # network namespaces for the across-hosts test
  libopenmpi-dev       # OpenMPI 4.1: the mpi_allreduce reducer (headers, -lmpi)
  openmpi-bin          # mpirun: run { launcher: "mpirun" } and the MPI tests
  munge                # Slurm's authentication, and the single-node Slurm
  slurmctld            # that examples/slurm/slurm_test starts (srun ranks);
  slurmd               # the packages' own services are not started
  slurm-client
)

install_debian_packages() {
  local missing=() p
  for p in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "install_deps: all ${#PACKAGES[@]} Debian packages present"
    return
  fi
  echo "install_deps: installing ${missing[*]}"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q
  $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# The wheel's CUDA libraries come from the CUDA 13.0 toolkit under
# /usr/local/cuda (the same builds torch pins) except these three, which
# the toolkit lacks; on a machine without /usr/local/cuda every nvidia-*
# dependency is installed instead (about 2.7 GB more).
TORCH_VERSION=2.11.0
CUDA_EXTRAS=(nvidia-cufile==1.15.1.6 nvidia-cusparselt-cu13==0.8.0 nvidia-nvshmem-cu13==3.4.5)
PYTHON_DEPS=(filelock 'typing-extensions>=4.10' 'setuptools<82' 'sympy>=1.13.3'
             'networkx>=2.5.1' jinja2 fsspec numpy)

install_torch_venv() {
  local venv="${RECEIPT_PARITY_TORCH_VENV:-$HOME/.cache/receipt-parity/torch-$TORCH_VERSION/venv}"
  local done_marker="$venv/.receipt-parity-complete"
  if [ -f "$done_marker" ] && [ "$(cat "$done_marker")" = "torch==$TORCH_VERSION" ]; then
    echo "install_deps: torch $TORCH_VERSION present in $venv"
    return
  fi
  echo "install_deps: installing torch $TORCH_VERSION (LibTorch) into $venv"
  rm -f "$done_marker"
  mkdir -p "$(dirname "$venv")"
  [ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv"
  local pip=("$venv/bin/python" -m pip install -q --disable-pip-version-check)
  if [ -d /usr/local/cuda/lib ] || [ -d /usr/local/cuda/lib64 ]; then
    # torch's Python dependencies first, then torch itself without its
    # CUDA ones (the toolkit provides them).
    "${pip[@]}" "${PYTHON_DEPS[@]}"
    "${pip[@]}" --no-deps "torch==$TORCH_VERSION" "${CUDA_EXTRAS[@]}"
  else
    "${pip[@]}" "torch==$TORCH_VERSION" numpy
  fi
  "$venv/bin/python" -c "import torch, sys; sys.exit(not torch.__version__.startswith('$TORCH_VERSION'))" \
    || { echo "install_deps: torch in $venv does not import as $TORCH_VERSION" >&2; exit 1; }
  echo "torch==$TORCH_VERSION" > "$done_marker"
}

# TensorBoard's own reader for the trainer's curves (trainer:tensorboard_test
# reads DIR/tensorboard/ with it), in the same venv.
TENSORBOARD_VERSION=2.21.0

install_tensorboard() {
  local venv="${RECEIPT_PARITY_TORCH_VENV:-$HOME/.cache/receipt-parity/torch-$TORCH_VERSION/venv}"
  local check="import tensorboard, sys; sys.exit(tensorboard.__version__ != '$TENSORBOARD_VERSION')"
  if "$venv/bin/python" -c "$check" 2>/dev/null; then
    echo "install_deps: tensorboard $TENSORBOARD_VERSION present in $venv"
    return
  fi
  echo "install_deps: installing tensorboard $TENSORBOARD_VERSION into $venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check \
    "tensorboard==$TENSORBOARD_VERSION" 'setuptools<82'
  "$venv/bin/python" -c "$check" \
    || { echo "install_deps: tensorboard in $venv does not import as $TENSORBOARD_VERSION" >&2; exit 1; }
}

install_debian_packages
install_torch_venv
install_tensorboard
