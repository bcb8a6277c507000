#!/usr/bin/env bash
# In-core graph construction (construct_bench, uffd-grouped = pheap-graph ingest's way, 2 threads,
# RelWithDebInfo) with huge pages `always` against `off`, 2 MiB and 4 KiB pages, and std::allocator,
# interleaved rounds (issue 48's construction target, measured on `always`: `auto` is not built).
#   bench/results/2026-12-07-huge-construct/run.sh BUILD SCALE ROUNDS [OLD_BENCH]
# OLD_BENCH (a graph_construct_bench of another commit) adds its `always` row as `2m-always-old`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}; scale=${2:-22}; rounds=${3:-3}; old=${4:-}
B=$build/bench/graph/graph_construct_bench
dir=${BENCH_DIR:-/tmp}/pheap-hc-$$; mkdir -p "$dir"; trap 'rm -rf "$dir"' EXIT
csv=$here/construct.csv; rm -f "$csv"  # construct_bench writes the header to a new file
root=$(cd "$here/../../.." && pwd); out=$here
log() { echo "$*" >>"$here/run.log"; }
. "$root/bench/common.sh"; machine_info huge-construct "$dir" >/dev/null
cfgs="4k:4096:off:$B 2m-off:2097152:off:$B 2m-always:2097152:always:$B dram:4096:off:$B"
[ -n "$old" ] && cfgs="$cfgs 2m-always-old:2097152:always:$old"
for ((r = 1; r <= rounds; ++r)); do
  for cfg in $cfgs; do
    IFS=: read -r name ps hp bin <<<"$cfg"
    sys=uffd-grouped; [ "$name" = dram ] && sys=dram-grouped
    PHEAP_HUGE_PAGES=$hp "$bin" --scale "$scale" --systems "$sys" --page-sizes "$ps" --modes incore \
      --dir "$dir" --timeout 600 --label "r$r-$name" --csv "$csv" 2>>"$here/run.log" | tail -1 | cut -d, -f1-13 | tee -a "$here/run.log"
  done
done
load_after
