#!/usr/bin/env bash
# Plots bench/run_embeddings.sh's output (its JSON lines, one per weight type): embeddings/s of Parley and llama.cpp
# side by side per type.   bench/plot_embeddings.sh bench/out/embeddings.txt docs/bench-embeddings.png
set -euo pipefail
txt=$1 png=$2
if ! command -v gnuplot >/dev/null; then
  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends gnuplot-nox
fi
data=$(mktemp)
trap 'rm -f "$data"' EXIT
# shape/type, Parley embeddings/s, llama.cpp embeddings/s (from the "## SHAPE shape, TYPE (random weights)" line).
awk '/^## /{t=$0; sub(/ \(random.*/, "", t); s=t; sub(/.*, /, "", t); sub(/^## /, "", s); sub(/ shape.*/, "", s); sub(/-Embedding/, "", s);
       t=s "/" toupper(t)}
     /^\{"inputs"/{match($0, /"inputs":[0-9]+/); n=substr($0, RSTART+9, RLENGTH-9);
       match($0, /"parley_s":[0-9.e-]+/); p=substr($0, RSTART+11, RLENGTH-11);
       match($0, /"llama_s":[0-9.e-]+/); l=substr($0, RSTART+10, RLENGTH-10);
       printf "%s %.2f %.2f\n", t, n/p, n/l}' "$txt" > "$data"
gnuplot <<PLOT
set terminal pngcairo size 760,400 font 'sans,10' noenhanced
set output '$png'
set style data histograms; set style histogram clustered gap 1; set style fill solid 0.8 border -1
set ylabel 'embeddings/s (128-token inputs)'; set grid ytics; set key top right; set yrange [0:*]
set title 'Embedding shapes, 2 threads: Parley vs llama.cpp'
plot '$data' using 2:xtic(1) title 'Parley', '' using 3 title 'llama.cpp (node-llama-cpp 3.21.1)'
PLOT
echo "wrote $png"
