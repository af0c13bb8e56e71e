#!/usr/bin/env bash
# Mixture-of-experts models against llama.cpp on the same files: the moe-small shape (Qwen3-30B-A3B's 128 experts
# and top 8, narrower and shallower) with Q4_K_M experts and with gpt-oss's MXFP4 experts; prefill of 512, decode
# at 1, 8 and 32 sequences, batch-1 GB/s against the measured read peak, resident memory; then the plot
# (bench/out/moe.png).   bench/run_moe.sh [threads]   (about 3 minutes on 2 cores)
source "$(dirname "$0")/bench_env.sh"
csv=bench/out/moe.csv
rm -f "$csv"
for dtype in q4_k_m mxfp4_moe; do
  f=bench/out/parley-moe-small-$dtype.gguf
  [ -f "$f" ] || "$BUILD/parley" gen-model --shape moe-small --dtype "$dtype" --out "$f"
  echo; echo "## moe-small shape, $dtype (random weights)"
  "$BUILD/bench_decode" --model "$f" --threads "$threads" --prefill-tokens 512 --prefill-reps 3 --gen-tokens 32 \
    --rounds 2 --peer --csv "$csv" --label "moe-small (qwen3moe shape)"
done
bench/plot_decode.sh "$csv" bench/out/moe.png
