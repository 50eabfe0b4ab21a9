#!/usr/bin/env bash
# Builds benchmarks/gemm_probe/libpgk_gemm_probe.so (issue 13's configuration probe) with nvcc
# and CUTLASS from NVIDIA's wheels, the kernels wheel's own toolchain:
#   python -m pip install "nvidia-cuda-nvcc==13.0.*" "nvidia-nvvm==13.0.*" "nvidia-cuda-crt==13.0.*" \
#       "nvidia-cuda-runtime==13.0.*" "nvidia-cuda-cccl==13.0.*" "nvidia-cutlass==4.2.0.0"
#   PYTHON=that/python bash benchmarks/gemm_probe/build.sh [OUTDIR] [JOBS]
# One translation unit per candidate (-DPGK_PROBE_PART=i), compiled JOBS at a time; ptxas's
# warnings (C7510: WGMMA serialized, ...) land in OUTDIR/ptxas-<i>.log.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUTDIR=${1:-$HERE/build}
JOBS=${2:-2}
PY=${PYTHON:-python3}
SP=$("$PY" -c 'import nvidia, os; print(os.path.dirname(list(nvidia.__path__)[0]))')
CU=$SP/nvidia/cu13
CUT=$SP/cutlass_library/source
KER=$ROOT/packages/pygpukit-kernels
mkdir -p "$OUTDIR"
FLAGS=(-O3 -DNDEBUG -std=c++17 --expt-relaxed-constexpr -Xcompiler=-fPIC -Xcompiler=-fvisibility=hidden
       -gencode arch=compute_90a,code=sm_90a
       -I"$KER/include" -I"$KER/cuda" -I"$KER/cuda/gemm" -I"$CUT/include" -I"$CUT/tools/util/include"
       -I"$CU/include" -I"$CU/include/cccl")
COUNT=$(grep -c '^  X([0-9]*,' "$HERE/probe.cu")
compile() {  # part index (-1: the registry and the C ABI)
  local part=$1 obj="$OUTDIR/part$1.o"
  "$CU/bin/nvcc" "${FLAGS[@]}" -DPGK_PROBE_PART="$part" -Xptxas=-warn-spills -c "$HERE/probe.cu" \
    -o "$obj" 2>"$OUTDIR/ptxas$part.log" || { cat "$OUTDIR/ptxas$part.log"; return 1; }
  echo "part $part done ($(grep -c -i warn "$OUTDIR/ptxas$part.log" || true) warnings)"
}
export -f compile
export OUTDIR HERE
export CU
FLAGS_STR=$(printf '%q ' "${FLAGS[@]}")
export FLAGS_STR
seq -1 $((COUNT - 1)) | xargs -P "$JOBS" -I{} bash -c 'eval "FLAGS=($FLAGS_STR)"; compile {}'
"$CU/bin/nvcc" -shared -gencode arch=compute_90a,code=sm_90a -cudart static -L"$CU/lib" \
  -o "$OUTDIR/libpgk_gemm_probe.so" "$OUTDIR"/part*.o
echo "built $OUTDIR/libpgk_gemm_probe.so ($COUNT candidates)"
