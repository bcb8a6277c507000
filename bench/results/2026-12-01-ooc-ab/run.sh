#!/bin/bash
# The A/B of README.md: BASE_BIN = graph_construct_bench built at 671f42c, NEW_BIN = this tree's;
# rounds 1-3 both modes, rounds 4-9 half only; page cache dropped before each run. As root.
set -u
base=${BASE_BIN:?} new=${NEW_BIN:?} dir=${DIR:-/tmp/ab47} csv=${CSV:-$dir/ab.csv}
mkdir -p "$dir"
run() { sync; echo 3 > /proc/sys/vm/drop_caches
  "$1" --scale 18 --systems uffd --modes "$2" --page-sizes 4096 --timeout 120 --dir "$dir" \
    --datastore-bytes 140103680 --label "$3" --csv "$csv" > /dev/null 2>&1; }
for rep in 1 2 3; do for mode in half quarter; do run "$base" $mode base-r$rep; run "$new" $mode main-r$rep; done; done
for rep in 4 5 6 7 8 9; do run "$new" half main-r$rep; run "$base" half base-r$rep; done
