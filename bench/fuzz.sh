#!/usr/bin/env bash
# Coverage-guided fuzzing with libFuzzer under ASan+UBSan (tests/fuzz/): configures and builds build-fuzz/ with
# clang when needed, then runs each target for SECONDS on a scratch copy of its corpus (tests/fuzz/corpus/<target>/;
# fuzz_gguf's seeds are generated), so the repository's corpus grows only by hand.
#   bench/fuzz.sh SECONDS [TARGET...]     e.g. bench/fuzz.sh 120, bench/fuzz.sh 30 fuzz_jinja
# Prints target, runs, cov, ft and crashes; exits 1 when a target crashed (its input is named in the table's notes).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:?usage: bench/fuzz.sh SECONDS [TARGET...]}
shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_openai_request fuzz_ws_message fuzz_http_request fuzz_gguf fuzz_tokenizers
                                     fuzz_jinja fuzz_kv_transfer fuzz_structured_output)
BUILD=${PARLEY_FUZZ_BUILD_DIR:-build-fuzz}
export CCACHE_BASEDIR="$PWD"
if [ ! -f "$BUILD/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPARLEY_CUDA=OFF \
    -DPARLEY_FUZZ=ON -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
fi
cmake --build "$BUILD" -j "${PARLEY_JOBS:-$(nproc)}" --target "${targets[@]}"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/parley-fuzz.XXXXXX")
export UBSAN_OPTIONS=print_stacktrace=1
failed=0
rows=()
for t in "${targets[@]}"; do
  dir="$scratch/$t"
  mkdir -p "$dir/corpus" "$dir/crashes"
  [ ! -d tests/fuzz/corpus/"$t" ] || cp tests/fuzz/corpus/"$t"/. -r "$dir/corpus/"
  options=()
  if [ "$t" = fuzz_gguf ]; then
    python3 tests/fuzz/make_gguf_seeds.py "$dir/corpus"
    # The real model's header (metadata and vocabulary) without most of its weights: inputs stay small and quick.
    shared=../shared/models/stories260K.gguf
    [ -f "$shared" ] && head -c 65536 "$shared" >"$dir/corpus/stories260K_head.gguf"
    options=(-max_len=65536)
  fi
  # -timeout: a single input running this long is a finding (a hang), as a crash is.
  if ! "$BUILD/tests/fuzz/$t" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2560 -print_final_stats=1 \
       -artifact_prefix="$dir/crashes/" "${options[@]}" "$dir/corpus" >"$dir/log" 2>&1; then
    failed=1
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$dir/log" | tail -1 | cut -d' ' -f2)
  ft=$(grep -o 'ft: [0-9]*' "$dir/log" | tail -1 | cut -d' ' -f2)
  crashes=$(find "$dir/crashes" -type f | wc -l)
  rows+=("$(printf '| %-20s | %9s | %5s | %6s | %7s |' "$t" "${runs:-?}" "${cov:-?}" "${ft:-?}" "$crashes")")
  [ "$crashes" -eq 0 ] || rows+=("  crash: $(find "$dir/crashes" -type f | head -1) (log: $dir/log)")
done
echo "fuzzing for ${seconds}s per target (scratch: $scratch)"
echo "| target               |      runs |   cov |     ft | crashes |"
echo "|----------------------|-----------|-------|--------|---------|"
printf '%s\n' "${rows[@]}"
exit $failed
