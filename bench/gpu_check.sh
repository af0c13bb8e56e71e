#!/usr/bin/env bash
# The one prepared GPU run (the CUDA backend's checks and benchmark) for a lent GPU machine, in two steps:
#   bench/gpu_check.sh pack   here: builds parley_gpu_tests and bench_cuda, and copies them, the libraries
#                             the GPU machine's image may lack and the stories260K files into .gpu/ (ignored)
#   bench/gpu_check.sh run    there (device tool: carry .gpu, run this): the gpu test label, then the
#                             benchmark; everything also goes to $OUT/gpu_check.log
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  pack)
    cmake --build build -j "$(nproc)" --target parley_gpu_tests bench_cuda
    rm -rf .gpu && mkdir -p .gpu/bin .gpu/lib .gpu/models
    cp build/parley_gpu_tests build/bench_cuda .gpu/bin/
    cp -L "$(ldconfig -p | awk '/libxxhash.so.0 /{print $NF; exit}')" .gpu/lib/
    for f in stories260K.bin tok512.bin stories260K_greedy_reference.json; do cp ../shared/models/$f .gpu/models/; done
    mkdir -p "$(git rev-parse --git-dir)/info"
    grep -qsx '/.gpu/' "$(git rev-parse --git-dir)/info/exclude" || echo '/.gpu/' >> "$(git rev-parse --git-dir)/info/exclude"
    du -sh .gpu
    ;;
  run)
    out=${OUT:-/tmp}/gpu_check.log
    # NCCL: beside the toolkit's libraries, or in the image's Python package (too large to carry: 218 MB).
    nccl=$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0] + "/lib")' 2>/dev/null || true)
    export LD_LIBRARY_PATH="$PWD/.gpu/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${nccl}:${LD_LIBRARY_PATH:-}" PARLEY_SHARED_DIR="$PWD/.gpu"
    {
      nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
      ldd .gpu/bin/parley_gpu_tests | grep -E "not found|cuda|cublas|nccl" || true
      echo "== gpu tests"
      .gpu/bin/parley_gpu_tests --durations yes || echo "gpu tests: exit $?"
      echo "== bench_cuda"
      .gpu/bin/bench_cuda --seqs 1,32,256 --dtype bfloat16 || echo "bench_cuda: exit $?"
      .gpu/bin/bench_cuda --seqs 32 --dtype float32 --gen-tokens 32 || echo "bench_cuda f32: exit $?"
      .gpu/bin/bench_cuda --seqs 1,32 --prompt-tokens 1024 --gen-tokens 32 || echo "bench_cuda long context: exit $?"
    } 2>&1 | tee "$out"
    ;;
  *) echo "usage: $0 pack|run" >&2; exit 2 ;;
esac
