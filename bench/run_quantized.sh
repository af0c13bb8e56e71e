#!/usr/bin/env bash
# Quantized weights against llama.cpp on the same files: prefill of 512 tokens, decode at 1, 8 and 32
# sequences, batch-1 GB/s against the measured read peak and resident memory, for the 110M, qwen3-0.6b and
# llama3.2-1b shapes at Q8_0 and Q4_K_M; then the plot (bench/out/decode.png).
#   bench/run_quantized.sh [threads]     (run on an otherwise idle machine; about 30 minutes on 2 cores)
source "$(dirname "$0")/bench_env.sh"
csv=bench/out/decode.csv
rm -f "$csv"
for row in "110m q8_0 32 2" "110m q4_k_m 32 2" "qwen3-0.6b q8_0 16 1" "qwen3-0.6b q4_k_m 16 1" \
           "llama3.2-1b q8_0 16 1" "llama3.2-1b q4_k_m 16 1"; do  # shape, type, tokens per sequence, rounds
  read -r shape dtype gen rounds <<< "$row"
  f=bench/out/parley-$shape-$dtype.gguf
  [ -f "$f" ] || "$BUILD/parley" gen-model --shape "$shape" --dtype "$dtype" --out "$f"
  echo; echo "## $shape shape, $dtype (random weights)"
  "$BUILD/bench_decode" --model "$f" --threads "$threads" --prefill-tokens 512 --prefill-reps 3 --gen-tokens "$gen" \
    --rounds "$rounds" --peer --csv "$csv" --label "$shape"
done
bench/plot_decode.sh "$csv" bench/out/decode.png
