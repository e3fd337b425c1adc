#!/usr/bin/env bash
# Install ptrm (editable) with its test extras into the current Python environment.
# torch goes first: `pip install torch==2.13.0` takes the local CPU build where one is provided,
# whereas a bare `torch` requirement with nothing installed would pull a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! "$PY" -c "import torch" 2>/dev/null; then
    "$PY" -m pip install -q "torch==2.13.0"
fi
"$PY" -m pip install -q -e ".[test]"
# The pzpr.js reference engine and the golden set, exactly as PPBench ships them. --no-deps: the
# package's own dependencies (gymnasium, a JS bridge) are not needed to read these files.
"$PY" -m pip install -q --no-deps "ppbench==0.1.0" || echo "warning: ppbench wheel unavailable; oracle tests will skip" >&2
# Triton's CPU interpreter checks the GPU norm kernel bit for bit (tests/test_norm_kernel.py). A
# CPU torch has no Triton, so it goes into a folder of its own: only that test's subprocess puts
# it on its path, and nothing else this environment runs ever sees it.
if ! "$PY" -c "import triton" 2>/dev/null && [ ! -d .triton/triton ]; then
    "$PY" -m pip install -q --no-deps --target .triton "triton==3.6.0" \
        || echo "warning: Triton unavailable; the norm kernel's interpreter tests will skip" >&2
fi
