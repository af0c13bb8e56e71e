#!/usr/bin/env bash
# Runs every benchmark and prints their tables: kernel GFLOP/s against the measured
# peak, sampling cost per token, then prefill/decode tokens/s on stories260K and on random models of the 110M shape
# (F32), and of the 110M, qwen3-0.6b and llama3.2-1b shapes at Q8_0 and Q4_K_M (bench/run_quantized.sh), each with
# llama.cpp (node-llama-cpp) measured on the same GGUF in the same run.
#   bench/run_all.sh [threads]     (default: all cores; run on an otherwise idle machine)
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-$(nproc)}
BUILD=${PARLEY_BUILD_DIR:-build}
[ -x "$BUILD/bench_decode" ] || { cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build "$BUILD"; }
bench/peer/install.sh
mkdir -p bench/out
model110=bench/out/parley-110m-f32.gguf
[ -f "$model110" ] || "$BUILD/parley" gen-model --shape 110m --dtype f32 --out "$model110"

echo "## Kernels"; "$BUILD/bench_kernels" --threads "$threads"; echo
echo "## Sampler"; "$BUILD/bench_sampler"; echo
echo "## Tokenization: Llama 3 and Qwen3 vocabularies"; tests/e2e/install.sh >/dev/null; node bench/bench_tokenize.mjs "$BUILD"; echo
echo "## Chat templates: parse and render time, 10 messages (Jinja2 beside)"; "$BUILD/bench_templates"; echo
echo "## stories260K"; "$BUILD/bench_decode" --model ../shared/models/stories260K.gguf --threads "$threads" --peer; echo
echo "## 110M shape (random weights)"; "$BUILD/bench_decode" --model "$model110" --threads "$threads" --gen-tokens 32 --peer
echo; PARLEY_BUILD_DIR="$BUILD" bench/run_quantized.sh "$threads"  # 110M, qwen3-0.6b and llama3.2-1b at Q8_0 and Q4_K_M, and the plot
echo; echo "## Persistent batch: sampling metadata per step"; "$BUILD/bench_persistent_batch"
echo; echo "## Serving: stories260K, 16 concurrent streaming clients, 64 prompt + 64 output tokens"
node bench/serve/load.mjs --concurrency 16 --num-requests 200 --prompt-tokens 64 --output-tokens 64 --spawn "$BUILD/parley" --threads "$threads"
echo; echo "## Serving: stories260K, Poisson arrivals at 32 req/s"
node bench/serve/load.mjs --request-rate 32 --num-requests 200 --prompt-tokens 64 --output-tokens 64 --spawn "$BUILD/parley" --threads "$threads"
echo; echo "## Parallel sampling: n = 8, 512-token prompt, 128 tokens each (110M shape)"
"$BUILD/bench_parallel_sampling" --model "$model110" --threads "$threads"
echo; echo "## Async scheduling: actor engine, on against off, and the one-thread loop (stories260K, 1 compute thread)"
"$BUILD/bench_async_scheduling" --model ../shared/models/stories260K.bin --tokenizer ../shared/models/tok512.bin --threads 1 --gen-tokens 128
echo; echo "## Async scheduling: 110M shape"
"$BUILD/bench_async_scheduling" --model "$model110" --threads "$threads" --gen-tokens 32 --repeats 2
echo; echo "## Speculative decoding: n-gram drafts against off (stories260K, 1 thread)"
"$BUILD/bench_speculative" --model ../shared/models/stories260K.bin --tokenizer ../shared/models/tok512.bin --threads 1 --repeats 5 --draft-layers 2 --draft-model ../shared/models/stories260K.gguf
echo; echo "## Speculative decoding: 110M shape"
"$BUILD/bench_speculative" --model "$model110" --threads "$threads" --concurrency 1,16 --gen-tokens 32 --repeats 2
echo; echo "## PD disaggregation: 1 prefill + 1 decode instance against colocated (stories260K)"
node bench/serve/pd.mjs "$BUILD/parley" --request-rate 8 --num-requests 120 --threads "$threads"
echo; echo "## Embeddings: Qwen3-Embedding-0.6B shape, 512 inputs of 128 tokens (and the plot)"
PARLEY_BUILD_DIR="$BUILD" bench/run_embeddings.sh "$threads" | tee bench/out/embeddings.txt
bench/plot_embeddings.sh bench/out/embeddings.txt bench/out/embeddings.png
