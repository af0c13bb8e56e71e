# Sourced by the bench/run_*.sh scripts: strict mode, the checkout as the working folder, the thread count
# ($1, default every core), the build folder, the llama.cpp peer installed and bench/out/ made.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
threads=${1:-$(nproc)}
BUILD=${PARLEY_BUILD_DIR:-build}
[ -d bench/peer/node_modules/node-llama-cpp ] || bench/peer/install.sh
mkdir -p bench/out
