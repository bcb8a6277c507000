#!/usr/bin/env bash
# In-core graph construction (construct_bench, uffd-grouped = pheap-graph ingest's way, 2 threads)
# with huge pages `auto` against `off` and `always` (2 MiB pages) and 4 KiB pages, interleaved
# rounds, each form in its own process (issue 48's construction target).
#   bench/results/2026-12-07-huge-auto/construct.sh BUILD SCALE ROUNDS
# MODES (default incore; e.g. half,quarter: out of core, a memory cgroup per run) and NAME
# (default construct: NAME.csv, NAME.log, NAME-pager.log) for the out-of-core run; CFGS the forms;
# SLACK (MiB, default the bench's 32) the cgroup's room beside the budget: a SCALE 20
# uffd-grouped run holds ~35 MiB besides the buffer and pheap's batches (smaps), and at 2 MiB
# pages those batches are ~24 MiB more.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}; scale=${2:-22}; rounds=${3:-3}
B=$build/bench/graph/graph_construct_bench
dir=${BENCH_DIR:-/tmp}/pheap-hc-$$; mkdir -p "$dir"; trap 'rm -rf "$dir"' EXIT
modes=${MODES:-incore}; name=${NAME:-construct}
csv=$here/$name.csv; rm -f "$csv"  # construct_bench writes the header to a new file
root=$(cd "$here/../../.." && pwd); out=$here
log() { echo "$*" >>"$here/$name.log"; }
. "$root/bench/common.sh"; machine_info huge-auto "$dir" >/dev/null
cfgs=${CFGS:-"4k:4096:off 2m-off:2097152:off 2m-always:2097152:always 2m-auto:2097152:auto"}
for ((r = 1; r <= rounds; ++r)); do
  for cfg in $cfgs; do
    IFS=: read -r form ps hp <<<"$cfg"
    PHEAP_HUGE_PAGES=$hp PHEAP_DEBUG=1 "$B" --scale "$scale" --systems uffd-grouped --page-sizes "$ps" --modes "$modes" \
      --dir "$dir" --timeout "${TIMEOUT:-600}" ${SLACK:+--slack-mib "$SLACK"} --label "r$r-$form" --csv "$csv" 2>"$dir/err.txt" | cut -d, -f1-13 | tee -a "$here/$name.log"
    grep 'at close' "$dir/err.txt" | sed "s/^/== r$r $form: /" >>"$here/$name-pager.log" || true
  done
done
load_after
