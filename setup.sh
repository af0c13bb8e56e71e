#!/usr/bin/env bash
# Parley set-up: installs Debian packages, builds, then runs the main job or the test suite.
#   ./setup.sh serve  install, build, and serve the OpenAI API on 127.0.0.1:8000 (stories260K from ../shared)
#   ./setup.sh test   install, build, and run the whole test suite (ctest), then again under ASan+UBSan, then the fuzzers
#   ./setup.sh run    install, build, and run `parley generate` on the built-in model
set -euo pipefail
cd "$(dirname "$0")"
mode=${1:-run}
BUILD=${PARLEY_BUILD_DIR:-build}
# Paths under the checkout hash as relative ones, so another clone (CI's) reuses this machine's compiled objects.
export CCACHE_BASEDIR="$PWD"

install_packages() {
  local pkgs=(build-essential cmake ninja-build ccache libcli11-dev nlohmann-json3-dev catch2 libxxhash-dev
              libcaf-dev libboost1.81-dev libspdlog-dev libpcre2-dev libutf8proc-dev
              python3-jinja2 libssl-dev libncurses-dev chromium tmux clang clang-format libclang-rt-14-dev libomp-dev)
  # PCRE2 and utf8proc: byte-level BPE pre-tokenizer regexes and NFC; Jinja2: the chat-template oracle;
  # OpenSSL: --kv-secret's HMAC and the admin page's CSP hashes; ncurses: `parley admin`; chromium and tmux: the
  # admin consoles' tests (a browser, a terminal); clang, its runtimes and OpenMP: the libFuzzer targets;
  # clang-format: the style test (.clang-format).
  local missing=()
  for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
  # The end-to-end tests run on Node.js with the `openai` npm client (tests/e2e/install.sh fetches it).
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends nodejs npm
  fi
}

build() {
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache
  cmake --build "$BUILD" -j "$(nproc)"
}

install_packages
build
case "$mode" in
  run)  shift || true; "$BUILD/parley" generate --prompt "Once upon a time" --max-tokens 64 "$@" ;;
  serve)
    shift || true
    model=()
    [ -f ../shared/models/stories260K.bin ] && model=(--model ../shared/models/stories260K.bin --tokenizer ../shared/models/tok512.bin)
    exec "$BUILD/parley" serve "${model[@]}" "$@" ;;
  test)
    # Everything but the GPU suite (label gpu: run it on a GPU machine with `ctest --test-dir build -L gpu`).
    ctest --test-dir "$BUILD" --output-on-failure --no-tests=error -j "$(nproc)" -LE gpu
    # The same tests with AddressSanitizer and UndefinedBehaviorSanitizer, built without CUDA:
    # this is also the check that the project builds and passes where nvcc is absent.
    cmake -S . -B "$BUILD-asan" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DPARLEY_SANITIZE=ON -DPARLEY_CUDA=OFF -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
    cmake --build "$BUILD-asan" -j "$(nproc)" --target parley parley_tests parley_quant_tests
    ctest --test-dir "$BUILD-asan" --output-on-failure --no-tests=error -j "$(nproc)"
    # Every fuzz target (tests/fuzz) for 10 s on its corpus under ASan+UBSan, built with clang in $BUILD-fuzz:
    # a crash fails the run (`bench/fuzz.sh 300` is the long run).
    PARLEY_FUZZ_BUILD_DIR="$BUILD-fuzz" bench/fuzz.sh 10
    ;;
  *)    echo "usage: $0 serve|test|run" >&2; exit 2 ;;
esac
