#!/usr/bin/env bash
# Run AL (issue 16): a tiny buffer against the disk alone and against the floor of the
# userfaultfd mechanism doing the same I/O (disk_replay_bench --faults: a SIGBUS fill and one
# single-page unmap per read, nothing of pheap's). For each page size and buffer: graph
# construction as in run T (R-MAT SCALE 11, 2 threads, edge by edge, fixed buffer), then the
# replay with two reading threads and the floor with two faulting threads and a buffer of as
# many pages, back to back. Prints CSV:
#   round,page,buffer_pages,pheap_s,pages_read,pages_written,disk2_s,floor2_s
#   run.sh BUILD_DIR [ROUNDS] ["PAGE:PAGES ..."]
set -euo pipefail
build=$1 rounds=${2:-1}
points=${3:-"4096:16 4096:64 65536:16 65536:4"}
w=$(mktemp -d "${TMPDIR:-/tmp}/pheap-floor.XXXXXX")
trap 'rm -rf "$w"' EXIT
echo "round,page,buffer_pages,pheap_s,pages_read,pages_written,disk2_s,floor2_s"
for r in $(seq 1 "$rounds"); do
  for pt in $points; do
    page=${pt%%:*} n=${pt##*:}
    line=$("$build/bench/graph/graph_construct_bench" --scale 11 --threads 2 --systems uffd \
      --page-sizes "$page" --modes incore --buffer $((page * n)) --timeout 300 \
      --dir "$w" 2>/dev/null | grep -v '^#' | tail -1)
    IFS=, read -r _ _ _ _ _ _ _ st ing fl cl _ _ _ disk _ _ _ _ _ _ _ rd _ _ _ wb _ _ <<<"$line"
    [ "$st" = ok ] || { echo "$r,$page,$n,$st" ; continue; }
    t=$(awk -v a="$ing" -v b="$fl" -v c="$cl" 'BEGIN{printf "%.3f", a+b+c}')
    wr=$((wb / page))
    d=()
    for mode in "" --faults; do
      # shellcheck disable=SC2086
      d+=("$("$build/bench/pager/disk_replay_bench" --dir "$w" --page-size "$page" --file-bytes "$disk" \
        --reads "$rd" --writes "$wr" --threads 2 --buffer-pages "$n" $mode | tail -1 | cut -d, -f6)")
    done
    echo "$r,$page,$n,$t,$rd,$wr,${d[0]},${d[1]}"
  done
done
