#!/bin/bash
# The A/B of README.md here: BASE_BUILD = a RelWithDebInfo build (PHEAP_BUILD_BENCH=ON) of 3bfbdd4,
# NEW_BUILD = one of this tree; page cache dropped before each construction run. As root.
set -u
base=${BASE_BUILD:?} new=${NEW_BUILD:?} dir=${DIR:-/tmp/ab}/ds csv=${DIR:-/tmp/ab}/ab.csv
mkdir -p $dir
run() { sync; echo 3 > /proc/sys/vm/drop_caches
  "$1/bench/graph/graph_construct_bench" --scale 18 --systems uffd --modes "$2" --page-sizes 4096 --timeout 120 --dir "$dir" \
    --datastore-bytes 140103680 --label "$3" --csv "$csv" > /dev/null 2>&1; }
fb() { "$1/bench/pager/fault_bench" --mib 64 --reps 3 --dir $dir > ${DIR:-/tmp/ab}/fault-$2.csv 2>${DIR:-/tmp/ab}/fault-$2.log; }
for rep in 1 2; do for mode in half quarter; do run $base $mode base-r$rep; run $new $mode main-r$rep; done; done
for rep in 3 4 5 6; do run $new half main-r$rep; run $base half base-r$rep; done
fb $new new-2; fb $base old-2; fb $base old-3; fb $new new-3

