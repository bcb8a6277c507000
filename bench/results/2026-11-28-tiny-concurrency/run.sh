#!/usr/bin/env bash
# How many store reads a tiny-buffer run keeps in flight (bench/README.md run AB), and the disk
# alone doing that run's I/O with one reading thread and with two. For each page size and
# buffer: graph construction as in run T (R-MAT SCALE 11, 2 threads, edge by edge, fixed
# buffer), then disk_replay_bench with --threads 1 and --threads 2. Prints CSV:
#   round,page,buffer_pages,pheap_s,pages_read,pages_written,fault_s,in_fault,disk1_s,disk2_s
# in_fault = the pager's fault time (both threads, summed) / the ingest time: the mean number of
# application threads inside a fault, each of which, filling on its own thread, has at most one
# store read in flight. disk1_s / disk2_s: the replay with one / two reading threads (plus the
# writing thread in both).
#   run.sh BUILD_DIR [ROUNDS] ["PAGE:PAGES ..."]
set -euo pipefail
build=$1 rounds=${2:-1}
points=${3:-"4096:16 4096:64 65536:16 65536:4"}
w=$(mktemp -d "${TMPDIR:-/tmp}/pheap-tiny.XXXXXX")
trap 'rm -rf "$w"' EXIT
echo "round,page,buffer_pages,pheap_s,pages_read,pages_written,fault_s,in_fault,disk1_s,disk2_s"
for r in $(seq 1 "$rounds"); do
  for pt in $points; do
    page=${pt%%:*} n=${pt##*:}
    line=$("$build/bench/graph/graph_construct_bench" --scale 11 --threads 2 --systems uffd \
      --page-sizes "$page" --modes incore --buffer $((page * n)) --timeout 300 \
      --dir "$w" 2>/dev/null | grep -v '^#' | tail -1)
    IFS=, read -r _ _ _ _ _ _ _ st ing fl cl _ _ _ disk _ _ _ _ _ _ _ rd _ _ _ wb _ fns _ <<<"$line"
    [ "$st" = ok ] || { echo "$r,$page,$n,$st" ; continue; }
    t=$(awk -v a="$ing" -v b="$fl" -v c="$cl" 'BEGIN{printf "%.3f", a+b+c}')
    wr=$((wb / page))
    d=()
    for th in 1 2; do
      d+=("$("$build/bench/pager/disk_replay_bench" --dir "$w" --page-size "$page" --file-bytes "$disk" \
        --reads "$rd" --writes "$wr" --threads "$th" | tail -1 | cut -d, -f6)")
    done
    echo "$r,$page,$n,$t,$rd,$wr,$(awk -v f="$fns" -v i="$ing" 'BEGIN{printf "%.3f,%.2f", f/1e9, f/1e9/i}'),${d[0]},${d[1]}"
  done
done
