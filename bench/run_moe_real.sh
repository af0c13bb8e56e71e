#!/usr/bin/env bash
# The real MoE shapes against llama.cpp on the same files: gpt-oss-20b (MXFP4 experts, ~12 GB) and Qwen3-30B-A3B
# at Q4_K_M (~18 GB), random weights. Each file is resident once at a time: llama.cpp's round runs before Parley
# loads it (--peer-first). Prefill of 512, decode at 1, 8 and 32 sequences, batch-1 GB/s against the read probe for
# the bytes a token reads, resident memory; then the plot (bench/out/moe-real.png).
#   bench/run_moe_real.sh [threads]   (about 20 minutes on 2 cores, 24 GiB; gen-model writes each file in a minute)
source "$(dirname "$0")/bench_env.sh"
csv=bench/out/moe-real.csv
rm -f "$csv"
for spec in gpt-oss-20b:mxfp4_moe qwen3-30b-a3b:q4_k_m; do
  shape=${spec%%:*} dtype=${spec##*:}
  f=bench/out/parley-$shape-$dtype.gguf
  [ -f "$f" ] || "$BUILD/parley" gen-model --shape "$shape" --dtype "$dtype" --out "$f"
  echo; echo "## $shape shape, $dtype (random weights)"
  "$BUILD/bench_decode" --model "$f" --threads "$threads" --prefill-tokens 512 --prefill-reps 2 --gen-tokens 16 \
    --rounds 1 --peer --peer-first --csv "$csv" --label "$shape"
done
bench/plot_decode.sh "$csv" bench/out/moe-real.png
