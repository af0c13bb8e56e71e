#!/usr/bin/env bash
# Every C++ source is as .clang-format writes it (120 columns): prints the files that are not and fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
format=$(command -v clang-format-14 || command -v clang-format)
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h' '*.cu' '*.cuh' 2>/dev/null ||
                     find actors engine http kernels model tests bench -name '*.[ch]pp' -o -name '*.cu*')
bad=()
for f in "${files[@]}"; do
  "$format" --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  printf 'not formatted (run %s -i on it):\n' "$format"; printf '  %s\n' "${bad[@]}"; exit 1
fi
echo "PASS format (${#files[@]} files)"
