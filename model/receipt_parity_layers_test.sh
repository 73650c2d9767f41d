#!/bin/bash
# Runs receipt_parity_layers_test.py with the Python of the project's
# LibTorch (@libtorch//:python): the harness's Python layers as a team's
# own Python code sees them.
# Usage: receipt_parity_layers_test.sh TEST_SCRIPT LAYERS_FILE TORCH_PYTHON
set -euo pipefail
exec "$3" "$1" "$2"
