#!/usr/bin/env bash
# Install the llama.cpp peer benchmark (node-llama-cpp 3.21.1, prebuilt CPU binaries).
# Never builds llama.cpp from source: install scripts are skipped and the load check
# uses build: "never". Exits non-zero if the prebuilt binary cannot be loaded here.
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "bench/peer/install.sh: node and npm are required (Node.js >= 20)" >&2
    exit 1
fi

npm_flags=(--ignore-scripts --no-audit --no-fund --loglevel=error)
if [[ -f package-lock.json ]]; then
    npm ci "${npm_flags[@]}" >/dev/null
else
    npm install "${npm_flags[@]}" >/dev/null
fi

if ! check_out=$(node check_binary.mjs 2>&1); then
    echo "bench/peer/install.sh: the node-llama-cpp prebuilt CPU binary cannot be loaded on this machine" >&2
    echo "(prebuilt linux-x64 binaries need glibc >= 2.34 on x86-64; building from source is disabled)." >&2
    echo "--- loader output ---" >&2
    echo "$check_out" >&2
    exit 1
fi
echo "$check_out"
