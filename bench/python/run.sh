#!/usr/bin/env bash
# bench/python/run.sh — the Python package against the C++ tools and np.memmap (bench.py says
# what each case measures). Writes bench/results/<date>-python/{python.csv,summary.csv,
# machine.txt,commands.txt,run.log}.
#
#   bench/python/run.sh [SCALE [ROUNDS]]     default SCALE 20, 3 interleaved rounds
#
# Environment: BUILD (the build tree with bin/pheap-graph; default build), VENV (default
# BUILD/python-venv, made and filled like scripts/test.sh's python stage), BENCH_DIR (scratch
# datastores and edge lists, default /tmp/pheap-bench-python; removed at the end), OUT.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
scale=${1:-20}
rounds=${2:-3}
build=${BUILD:-$root/build}
venv=${VENV:-$build/python-venv}
dir=${BENCH_DIR:-/tmp/pheap-bench-python}
out=${OUT:-$root/bench/results/$(date +%Y-%m-%d)-python}
mkdir -p "$out"
log() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$out/run.log"; }
. "$root/bench/common.sh"

cmake --build "$build" --target pheap-graph >/dev/null
if [ ! -x "$venv/bin/python" ]; then python3 -m venv "$venv"; fi
"$venv/bin/python" -m pip install -q numpy
"$venv/bin/python" -m pip install -q "$root/python"

machine_info "python scale $scale, $rounds rounds" "$(dirname "$dir")"
{
  echo "# $(date -Is), from $root"
  echo "bench/python/run.sh $scale $rounds"
  echo "$venv/bin/python $here/bench.py --tools $build/bin --dir $dir --out $out --scale $scale --rounds $rounds"
} >"$out/commands.txt"
trap 'rm -rf "$dir"' EXIT
"$venv/bin/python" "$here/bench.py" --tools "$build/bin" --dir "$dir" --out "$out" --scale "$scale" \
  --rounds "$rounds" 2>&1 | tee -a "$out/run.log"
load_after
