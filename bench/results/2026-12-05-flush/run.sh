#!/bin/bash
# flush after an in-core S20 build: mmap backend (msync) vs uffd (grouped) with and without write-behind
B=/work/main/build/bench/graph/graph_construct_bench
O=/tmp/b47/construct.csv
for r in 1 2 3; do
  $B --scale 20 --threads 2 --systems mmap --page-sizes 4096 --modes incore --reps 1 --dir /tmp --csv $O --label flush-s20-r$r
  $B --scale 20 --threads 2 --systems uffd-grouped --page-sizes 4096 --modes incore --reps 1 --dir /tmp --csv $O --label flush-s20-r$r
  PHEAP_WRITE_BEHIND=1000 $B --scale 20 --threads 2 --systems uffd-grouped --page-sizes 4096 --modes incore --reps 1 --dir /tmp --csv $O --label flush-s20-wb1000-r$r
  PHEAP_WRITE_BEHIND=250 $B --scale 20 --threads 2 --systems uffd-grouped --page-sizes 4096 --modes incore --reps 1 --dir /tmp --csv $O --label flush-s20-wb250-r$r
done
echo done
