#!/usr/bin/env bash
# Plots bench_decode --csv output: decode tokens/s against sequences, one panel per model, Parley (solid) and
# llama.cpp (dashed) for each weight type. Installs gnuplot-nox (Debian) when missing, as setup.sh installs packages.
#   bench/plot_decode.sh bench/out/decode.csv bench/out/decode.png
set -euo pipefail
csv=$1 png=$2
if ! command -v gnuplot >/dev/null; then
  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends gnuplot-nox
fi
mapfile -t labels < <(cut -d, -f1 "$csv" | awk '!seen[$0]++')
mapfile -t types < <(cut -d, -f2 "$csv" | awk '!seen[$0]++')
data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT
{
  echo "set terminal pngcairo size $((480 * ${#labels[@]})),420 font 'sans,10' noenhanced"
  echo "set output '$png'"
  echo "set datafile separator ','"
  echo "set logscale xy; set xtics (1, 8, 32); set xrange [0.8:40]; set grid"
  echo "set xlabel 'sequences decoding together'; set ylabel 'generated tokens/s'; set key top left"
  echo "set multiplot layout 1,${#labels[@]}"
  for l in "${!labels[@]}"; do
    echo "set title '${labels[$l]}'"
    plots=()
    for t in "${!types[@]}"; do
      rows=$data/$l-$t.csv  # the decode rows (seqs > 0) of this model and type; the last run wins
      awk -F, -v l="${labels[$l]}" -v t="${types[$t]}" '$1 == l && $2 == t && $3 > 0 { row[$3] = $0 } END { for (s in row) print row[s] }' \
        "$csv" | sort -t, -k3 -n > "$rows"
      [ -s "$rows" ] || continue
      plots+=("'$rows' using 3:4 with linespoints lw 2 lc $((t + 1)) dt 1 pt 7 title 'Parley ${types[$t]^^}'")
      plots+=("'$rows' using 3:(\$5 > 0 ? \$5 : NaN) with linespoints lw 2 lc $((t + 1)) dt 2 pt 6 title 'llama.cpp ${types[$t]^^}'")
    done
    (IFS=,; echo "plot ${plots[*]}")
  done
  echo "unset multiplot"
} | gnuplot
echo "wrote $png"
