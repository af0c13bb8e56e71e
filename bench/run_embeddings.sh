#!/usr/bin/env bash
# Embeddings per second against llama.cpp's embedding context on the same files: a Qwen3-Embedding-0.6B shape
# (qwen3-0.6b, last-token pooling) at Q8_0 with 512 inputs of 128 tokens and at F16 with a quarter of them (F16 is
# 3x slower on both engines: about 6 minutes at Q8_0 and 3 at F16 on 2 cores), and a BGE-base shape (bert, CLS
# pooling, bidirectional) at Q8_0 and F16 with all of them; bench/peer/embed_peer.mjs says how.
#   bench/run_embeddings.sh [threads] [inputs] [shape: qwen3-0.6b|bge-base, default both]
source "$(dirname "$0")/bench_env.sh"
inputs=${2:-512}
only=${3:-}
run() {  # shape pooling dtype inputs title
  [ -z "$only" ] || [ "$only" = "$1" ] || return 0
  local f=bench/out/parley-$1-embed-$3.gguf
  [ -f "$f" ] || "$BUILD/parley" gen-model --shape "$1" --pooling "$2" --dtype "$3" --out "$f" > /dev/null 2>&1
  echo; echo "## $5, $3 (random weights)"
  node bench/peer/embed_peer.mjs --parley "$BUILD/parley" --model "$f" --threads "$threads" --inputs "$4"
}
run qwen3-0.6b last q8_0 "$inputs" "Qwen3-Embedding-0.6B shape"
run qwen3-0.6b last f16 $((inputs / 4)) "Qwen3-Embedding-0.6B shape"
run bge-base cls q8_0 "$inputs" "BGE-base shape"
run bge-base cls f16 "$inputs" "BGE-base shape"
