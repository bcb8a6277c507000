#!/usr/bin/env bash
# bench/mpi/graph_ingest.sh — distributed ingestion (graph/mpi/FORMAT.md) against the plain
# tool on one R-MAT edge list: `pheap-graph ingest`, then `mpirun -np 1 pheap-graph ingest`,
# then `mpirun -np 2 ...`, one after the other (same machine state), REPS rounds interleaved.
# Every run ingests into a new datastore with the same flags; wall time includes process (and
# mpirun) start-up. Prints one CSV row per run, then per form: the median seconds, edges/s,
# the ratio to the plain tool, and the bytes the ranks sent each other per edge (records of
# 32 bytes plus the per-batch counts and agreement; the tool's "ranks N:" line).
#
#   bench/mpi/graph_ingest.sh [SCALE [REPS]]     (defaults 18 and 3; edge factor 16)
#
# Environment: BUILD (default build), BENCH_DIR (default /tmp), FLUSH (--flush-every, default
# 1M), MPIRUN (default mpirun). Needs a build with MPI (pheap-graph links pheap::graph_mpi).
set -euo pipefail

scale=${1:-18}
reps=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tool=${BUILD:-$root/build}/bin/pheap-graph
dir=$(mktemp -d "${BENCH_DIR:-/tmp}/graph-ingest-bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT
flush=${FLUSH:-1M}
mpirun=(${MPIRUN:-mpirun} --oversubscribe --bind-to none)
[ "$(id -u)" = 0 ] && mpirun+=(--allow-run-as-root)

"$tool" generate --scale "$scale" --edge-factor 16 --output "$dir/edges.txt" -q
edges=$(wc -l <"$dir/edges.txt")

# run FORM LAUNCHER... : one ingestion; prints "form,seconds,bytes_per_edge".
run() {
  local form=$1
  shift
  rm -rf "$dir/ds"
  local t0 t1 out
  t0=$(date +%s.%N)
  out=$("$@" "$tool" ingest --datastore "$dir/ds" -q --flush-every "$flush" "$dir/edges.txt")
  t1=$(date +%s.%N)
  local bpe
  bpe=$(sed -n 's/.* \([0-9.]*\) bytes per edge$/\1/p' <<<"$out")
  echo "$form,$(echo "$t1 - $t0" | bc -l | xargs printf '%.3f'),${bpe:-}"
}

echo "form,seconds,bytes_per_edge  (scale $scale, $edges edges, --flush-every $flush)"
results=$dir/results.csv
for _ in $(seq "$reps"); do
  run plain env | tee -a "$results"
  run mpi-np1 "${mpirun[@]}" -np 1 | tee -a "$results"
  run mpi-np2 "${mpirun[@]}" -np 2 | tee -a "$results"
done

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
base=$(grep '^plain,' "$results" | cut -d, -f2 | median)
echo
printf '%-8s %10s %12s %10s %14s\n' form median_s edges_per_s vs_plain bytes_per_edge
for form in plain mpi-np1 mpi-np2; do
  m=$(grep "^$form," "$results" | cut -d, -f2 | median)
  b=$(grep "^$form," "$results" | cut -d, -f3 | head -1)
  printf '%-8s %10.3f %12.0f %10.2f %14s\n' "$form" "$m" "$(echo "$edges / $m" | bc -l)" "$(echo "$m / $base" | bc -l)" "${b:--}"
done
