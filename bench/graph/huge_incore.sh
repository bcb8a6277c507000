#!/usr/bin/env bash
# bench/graph/huge_incore.sh — huge pages in core (issue 48's targets): a graph of several GiB
# queried by BFS and CC with 4 KiB page-table entries against 2 MiB ones, and the random-read
# microbenchmark, in one run, interleaved.
#
#   bench/graph/huge_incore.sh [BUILD] [SCALE] [ROUNDS]        (defaults: build 23 3)
#
# The graph: an R-MAT edge list (pheap-graph generate --scramble, binary, untimed), ingested
# undirected twice (untimed): 4 KiB pages (pheap-graph's default) and 2 MiB pages. Kept in DIR
# (default ${BENCH_DIR:-/tmp}/pheap-huge-incore) and reused when there: delete it to start over.
# Five configurations (CONFIGS: a subset, label:page size:huge pages[:settle]), each in its own
# process per run:
#   4k-off      4 KiB pages: 4 KiB entries (the tool's default datastore)
#   2m-off      2 MiB pages, --huge-pages off: 4 KiB entries (UFFDIO_COPY)
#   2m-always   2 MiB pages, --huge-pages always: 2 MiB entries (a read-only open:
#               src/pager/huge_pool.hpp, "Read-only opens")
#   2m-auto     2 MiB pages, --huge-pages auto: 4 KiB fills, promoted in the background while
#               the walk runs (src/pager/promoter.hpp)
#   2m-auto-settled  the same, the walk started once the promoter is done (walk only, no tool
#               run: the tool's query starts at once)
# Per round, per algorithm (bfs from the first edge's source, cc), per configuration:
#   walk   huge_walk_bench: the open with the heap read in (prefetch_all, waited for), then the
#          walk alone (the library calls of pheap-graph bfs/cc), wall and CPU time
#   tool   pheap-graph bfs|cc as a user runs it (/usr/bin/time), PHEAP_DEBUG=1 for the pager's
#          statistics at close (faults, huge fills, bytes mapped with 2 MiB entries)
# and the walk of the two 2 MiB configurations again with the walk's own DRAM arrays (vertex
# index, levels, parents, labels) on transparent huge pages too (GLIBC_TUNABLES=
# glibc.malloc.hugetlb=1: malloc advises MADV_HUGEPAGE): labels 2m-off+thp, 2m-always+thp —
# how much of a walk's time the heap's mapping can touch at all (THP_RUNS: the modes, default
# "off always"; empty: none).
# Every query has a buffer of BUFFER bytes (default 12 GiB: the heap in core) and reads through the
# page cache, warmed before the first round (the datastores' files read once). Then
# huge_bench --mib MIB (default 4096) --reps ROUNDS --modes off4k,off,always (random 8-byte reads;
# MIB=0: not run).
#
# Output in bench/results/<date>-huge-incore/ (OUT overrides): walk.csv, tool.csv, random.csv,
# pager.log (the tool runs' statistics lines), machine.txt, run.log; the table of bench/README.md
# ("Huge pages in core") comes from these by bench/tables.py.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
scale=${2:-23}
rounds=${3:-3}
dir=${DIR:-${BENCH_DIR:-/tmp}/pheap-huge-incore}
out=${OUT:-$root/bench/results/$(date +%Y-%m-%d)-huge-incore}
buffer=${BUFFER:-$((12 << 30))}  # bytes
mib=${MIB:-4096}
mkdir -p "$out" "$dir"
log() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$out/run.log"; }
. "$root/bench/common.sh"

tool=$build/bin/pheap-graph
walk=$build/bench/graph/graph_huge_walk_bench
micro=$build/bench/pager/huge_bench
for b in "$tool" "$walk" "$micro"; do
  [ -x "$b" ] || { echo "huge_incore.sh: $b not built (cmake --build $build)" >&2; exit 2; }
done
machine_info huge-incore "$dir"
echo "thp: $(cat /sys/kernel/mm/transparent_hugepage/enabled)" | tee -a "$out/machine.txt"

edges=$dir/edges-$scale.bin
if [ ! -f "$edges" ]; then
  log "SCALE $scale: generate"
  "$tool" generate --scale "$scale" --scramble --format binary --output "$edges" --quiet
fi
configs=${CONFIGS:-"4k-off:4KiB:off 2m-off:2MiB:off 2m-always:2MiB:always 2m-auto:2MiB:auto 2m-auto-settled:2MiB:auto:1"}
thp_runs=${THP_RUNS-"off always"}
for ps in 4KiB 2MiB; do
  [[ " $configs " == *":$ps:"* ]] || continue
  ds=$dir/g$scale-$ps
  if [ ! -d "$ds" ]; then
    log "SCALE $scale: ingest, $ps pages"
    "$tool" ingest --undirected --format binary --threads 2 --page-size "$ps" --buffer-size "$buffer" \
      --flush-every never --datastore "$ds" "$edges" --quiet 2>>"$out/run.log"
  fi
done
src=$(od -An -t u8 -N8 "$edges" | tr -d ' ')
live=$("$build/bin/pheap" info --json "$dir/g$scale-2MiB" | python3 -c 'import json,sys; print(json.load(sys.stdin)["live_bytes"])')
log "SCALE $scale: heap $((live >> 20)) MiB with data (2 MiB pages); bfs source $src; buffer $buffer"
log "warming the page cache"
cat "$dir"/g"$scale"-*/* >/dev/null

echo "round,label,algo,page_size,huge_pages,huge_in_force,heap_bytes,load_s,walk_s,walk_cpu_s,pager_faults,faults_per_gib,walk_minflt,huge_fills,huge_fallback_fills,huge_mapped_bytes,resident_bytes,result,huge_promotions" >"$out/walk.csv"
echo "round,label,algo,wall_s,user_s,sys_s,minflt,pager_faults,huge_fills,huge_mapped_bytes" >"$out/tool.csv"
for ((r = 1; r <= rounds; ++r)); do
  for algo in bfs cc; do
    for c in $configs; do
      IFS=: read -r label ps huge settle <<<"$c"
      ds=$dir/g$scale-$ps
      args=()
      [ "$algo" = bfs ] && args=(--source "$src")
      line=$("$walk" --datastore "$ds" --algo "$algo" "${args[@]}" --huge-pages "$huge" --settle "${settle:-0}" \
        --buffer-size "$buffer" --label "$label" 2>>"$out/run.log")
      echo "$r,$line" >>"$out/walk.csv"
      log "r$r $algo $label walk: $line"
      [ "${settle:-0}" = 1 ] && continue
      tf=$dir/time.txt
      PHEAP_DEBUG=1 /usr/bin/time -o "$tf" -f "%e %U %S %R" "$tool" "$algo" --datastore "$ds" "${args[@]}" \
        --huge-pages "$huge" --buffer-size "$buffer" >/dev/null 2>"$dir/err.txt"
      stats=$(grep 'at close' "$dir/err.txt" | tail -1)
      echo "== r$r $algo $label: $stats" >>"$out/pager.log"
      read -r wall user sys minflt <"$tf"
      faults=$(sed -nE 's/.*faults: read ([0-9]+) write ([0-9]+) .*/\1 \2/p' <<<"$stats" | awk '{print $1 + $2}')
      fills=$(sed -nE 's/.*\| huge (on|off) fills ([0-9]+) .*/\2/p' <<<"$stats")
      mapped=$(sed -nE 's/.* mapped ([0-9]+) B .*/\1/p' <<<"$stats")
      echo "$r,$label,$algo,$wall,$user,$sys,$minflt,$faults,$fills,$mapped" >>"$out/tool.csv"
      log "r$r $algo $label tool: $wall s wall, $faults pager faults, $fills huge fills, $mapped B mapped 2 MiB"
    done
    for huge in $thp_runs; do
      label=2m-$huge+thp
      args=()
      [ "$algo" = bfs ] && args=(--source "$src")
      line=$(GLIBC_TUNABLES=glibc.malloc.hugetlb=1 "$walk" --datastore "$dir/g$scale-2MiB" --algo "$algo" "${args[@]}" \
        --huge-pages "$huge" --buffer-size "$buffer" --label "$label" 2>>"$out/run.log")
      echo "$r,$line" >>"$out/walk.csv"
      log "r$r $algo $label walk: $line"
    done
  done
done

if [ "$mib" != 0 ]; then
  log "random reads: huge_bench --mib $mib --reps $rounds --modes off4k,off,always"
  "$micro" --dir "$dir" --mib "$mib" --reps "$rounds" --modes off4k,off,always >"$out/random.csv" 2>>"$out/run.log"
  grep '^#' "$out/random.csv" | tee -a "$out/run.log"
fi
load_after
log "done: $out"
