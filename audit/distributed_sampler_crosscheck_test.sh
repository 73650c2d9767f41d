#!/bin/bash
# Runs distributed_sampler_crosscheck.py with the Python of the project's
# LibTorch (@libtorch//:python), so the C++ sampler is checked against the
# DistributedSampler of the same torch.
# Usage: distributed_sampler_crosscheck_test.sh AUDIT SCRIPT TORCH_PYTHON
set -euo pipefail
exec "$3" "$2" "$1"
