#!/bin/sh
# build_cuda_app.sh OUTDIR [PROGRAM] — builds tests/programs/PROGRAM.cu (default cuda_app) into
# OUTDIR/PROGRAM with nvcc
# (-arch=sm_90 -lineinfo, NVTX header-only). Exit 77 (skip) when nvcc is missing; 2 on bad
# usage; nvcc's status when it fails. Set NVCC or CUDA_HOME to pick a toolkit, NVCC_ARCH to
# build for another architecture.
set -eu

if [ $# -lt 1 ] || [ $# -gt 2 ] || [ -z "$1" ]; then
    echo "usage: $0 OUTDIR [PROGRAM]" >&2
    exit 2
fi
out=$1
prog=${2:-cuda_app}
here=$(cd "$(dirname "$0")" && pwd)

nvcc=${NVCC:-}
if [ -z "$nvcc" ]; then
    if command -v nvcc >/dev/null 2>&1; then
        nvcc=$(command -v nvcc)
    elif [ -n "${CUDA_HOME:-}" ] && [ -x "$CUDA_HOME/bin/nvcc" ]; then
        nvcc=$CUDA_HOME/bin/nvcc
    elif [ -x /usr/local/cuda/bin/nvcc ]; then
        nvcc=/usr/local/cuda/bin/nvcc
    fi
fi
if [ -z "$nvcc" ] || [ ! -x "$nvcc" ]; then
    echo "build_cuda_app.sh: skipped: nvcc not found (set NVCC or CUDA_HOME, or put nvcc on PATH)" >&2
    exit 77
fi

mkdir -p "$out"
# -ldl: NVTX3 loads its injection library with dlopen (glibc < 2.34 keeps dlopen in libdl).
if [ ! -f "$here/$prog.cu" ]; then
    echo "build_cuda_app.sh: no program $here/$prog.cu" >&2
    exit 2
fi
exec "$nvcc" -O2 -arch="${NVCC_ARCH:-sm_90}" -lineinfo -o "$out/$prog" "$here/$prog.cu" -ldl
