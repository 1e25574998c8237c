#!/bin/sh
# tests/gpu/run.sh [SONDE]: the GPU acceptance checks, on any Linux machine
# with an NVIDIA GPU, its driver and PyTorch (CUDA); prints PASS or FAIL per
# check and exits non-zero when one failed. SONDE defaults to build/sonde.
# Results seen on hardware are recorded in docs/gpu.md.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
exec "${PYTHON:-python3}" "$here/acceptance.py" "${1:-$here/../../build/sonde}"
