#!/usr/bin/env bash
# Installs, from Debian 12's archive, whatever the build needs and is
# missing. Idempotent: when everything is there it installs nothing.
set -euo pipefail

PACKAGES=(
  g++
  bazel-bootstrap      # Bazel 4.2.3
  bazel-rules-java     # rules_java for Bazel offline
  libtorch-dev         # LibTorch 1.13 (CPU) with c10d and Gloo
  libgloo-dev          # headers c10d's Gloo process group needs
  libopenblas0-pthread # else LibTorch runs on the reference BLAS (~25x slower)
  libabsl-dev
  libprotobuf-dev
  protobuf-compiler
  libgoogle-glog-dev
  libgflags-dev
  libgtest-dev
  libgmock-dev
  libpng-dev
  zlib1g-dev
  python3-torch        # the PyTorch 1.13 cross-checks and DDP baseline (/usr/bin/python3)
  iproute2             # network namespaces for the across-hosts test
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi
echo "install_deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
