#!/usr/bin/env bash
# Installs what is missing (Debian 12), builds, and runs the whole study on
# the built-in synthetic receipts: the one-worker reference, the simulated
# 3+1 parity check, the sampler audits, the two-worker run with
# deduplicated validation, the fault drill and the trade report.
# Usage: ./run.sh [OUT]   (default out/study)
set -euo pipefail
cd "$(dirname "$0")"
tools/install_deps.sh
out="${1:-out/study}"
bazel run //study:study -- --out="$out"
