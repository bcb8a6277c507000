#!/usr/bin/env bash
# Tiny buffers against the disk (bench/README.md run T). For each page size and buffer:
# graph construction (R-MAT SCALE 11, 2 threads, edge by edge: the issue's "heap of 4 MB") with
# that fixed buffer, then disk_replay_bench doing the run's store reads and page writes, with
# the same concurrency, on a file of the datastore's size. Prints CSV:
#   round,page,buffer_pages,status,pheap_s,pages_read,pages_written,buffer_waits,disk_s,ratio
# ratio = pheap_s / disk_s (1.0 = the speed of the disk). A run that does not finish in
# TIMEOUT s is replayed with the I/O it did by then, on a 3 MiB file (the ratio is then a lower
# bound).
#   run.sh BUILD_DIR [ROUNDS] [TIMEOUT] ["PAGE:PAGES ..."]
set -euo pipefail
build=$1 rounds=${2:-1} timeout=${3:-120}
points=${4:-"65536:2 65536:4 65536:16 4096:16 4096:64 4096:256"}
w=$(mktemp -d "${TMPDIR:-/tmp}/pheap-tiny.XXXXXX")
trap 'rm -rf "$w"' EXIT
echo "round,page,buffer_pages,status,pheap_s,pages_read,pages_written,buffer_waits,disk_s,ratio"
for r in $(seq 1 "$rounds"); do
  for pt in $points; do
    page=${pt%%:*} n=${pt##*:}
    line=$("$build/bench/graph/graph_construct_bench" --scale 11 --threads 2 --systems uffd \
      --page-sizes "$page" --modes incore --buffer $((page * n)) --timeout "$timeout" \
      --dir "$w" 2>/dev/null | grep -v '^#' | tail -1)
    IFS=, read -r _ _ _ _ _ _ _ st ing fl cl _ _ _ disk _ _ _ _ _ _ _ rd _ _ _ wb waits _ <<<"$line"
    t=$(awk -v a="$ing" -v b="$fl" -v c="$cl" 'BEGIN{printf "%.3f", a+b+c}')
    [ "$st" = ok ] || t=$timeout
    [ "$st" = ok ] || disk=3145728  # a DNF row carries no size: SCALE 11 is 1.7-3.2 MB
    wr=$((wb / page))
    d=$("$build/bench/pager/disk_replay_bench" --dir "$w" --page-size "$page" --file-bytes "$disk" \
      --reads "$rd" --writes "$wr" --threads 2 | tail -1 | cut -d, -f6)
    echo "$r,$page,$n,$st,$t,$rd,$wr,$waits,$d,$(awk -v a="$t" -v b="$d" 'BEGIN{printf "%.2f", a/b}')"
  done
done
