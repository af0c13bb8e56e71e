#!/usr/bin/env bash
# Embeddings per second against llama.cpp's embedding context on the same files: a Qwen3-Embedding-0.6B shape
# (qwen3-0.6b, last-token pooling) at Q8_0 with 512 inputs of 128 tokens, and at F16 with a quarter of them (F16 is
# 3x slower on both engines: about 6 minutes at Q8_0 and 3 at F16 on 2 cores); bench/peer/embed_peer.mjs says how.
#   bench/run_embeddings.sh [threads] [inputs]
source "$(dirname "$0")/bench_env.sh"
inputs=${2:-512}
for dtype in q8_0 f16; do
  n=$inputs; [ "$dtype" = f16 ] && n=$((inputs / 4))
  f=bench/out/parley-qwen3-0.6b-embed-$dtype.gguf
  [ -f "$f" ] || "$BUILD/parley" gen-model --shape qwen3-0.6b --pooling last --dtype "$dtype" --out "$f" > /dev/null
  echo; echo "## Qwen3-Embedding-0.6B shape, $dtype (random weights)"
  node bench/peer/embed_peer.mjs --parley "$BUILD/parley" --model "$f" --threads "$threads" --inputs "$n"
done
