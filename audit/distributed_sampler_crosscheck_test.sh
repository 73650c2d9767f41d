#!/bin/bash
# Runs distributed_sampler_crosscheck.py with Debian's /usr/bin/python3, the
# interpreter that has torch (the python3 first on PATH may lack it).
# Usage: distributed_sampler_crosscheck_test.sh PATH_TO_AUDIT PATH_TO_SCRIPT
set -euo pipefail
exec /usr/bin/python3 "$2" "$1"
