#!/usr/bin/env bash
# Run AC (issue 16): faults on victims whose write-back is in flight are filled from the
# evictor's copy (page_table.hpp I8) instead of waiting for the write. The same machine state
# for both builds: BASE_BUILD (the pager before, 945f4b6) and NEW_BUILD, alternating, ROUNDS
# rounds, base first in each.
#   tiny buffers: run AB's protocol and columns (bench/results/2026-11-28-tiny-concurrency/run.sh,
#     one round per call) -> tiny.csv, with a first column naming the build;
#   S18 at 1/4: run M's protocol (bench/results/2026-11-27-graph-defaults/run.sh, which runs
#     <checkout>/build/bench/graph/graph_construct_bench, so each build's own checkout runs it),
#     pheap defaults then mmap-random per call -> construct.csv (labels AC-base-…, AC-new-…).
# Usage: run.sh BASE_CHECKOUT NEW_CHECKOUT ROUNDS   (checkouts with build/ built)
# RUN_PARTS ("tiny s18" by default) picks the parts; RUN_SUFFIX is appended to the CSV names
# and labels (a second S18 run on a later build: RUN_PARTS=s18 RUN_SUFFIX=2). Later A/B runs
# of this protocol set RUN_DIR (where the CSVs go) and RUN_TAG (the labels' letters, AC here).
set -euo pipefail
base=$1 new=$2 rounds=$3
here=${RUN_DIR:-$(cd "$(dirname "$0")" && pwd)} tag=${RUN_TAG:-AC}
parts=${RUN_PARTS:-tiny s18} sfx=${RUN_SUFFIX:-}
if [[ " $parts " == *" tiny "* ]]; then
echo "build,round,page,buffer_pages,pheap_s,pages_read,pages_written,fault_s,in_fault,disk1_s,disk2_s" > "$here/tiny$sfx.csv"
for r in $(seq 1 "$rounds"); do
  for b in base new; do
    co=$base; [ $b = new ] && co=$new
    "$here/../2026-11-28-tiny-concurrency/run.sh" "$co/build" 1 | tail -n +2 | sed "s/^1,/$b,$r,/" >> "$here/tiny$sfx.csv"
  done
done
fi
[[ " $parts " == *" s18 "* ]] || exit 0
for r in $(seq 1 "$rounds"); do
  for b in base new; do
    co=$base; [ $b = new ] && co=$new
    # run M's script from the build's checkout; mmap-random only once per round (after base)
    if [ $b = base ]; then
      RUN_OUT=$here/construct$sfx.csv RUN_LABEL=$tag$sfx-base-r$r RUN_TIMEOUT=400 "$co/bench/results/2026-11-27-graph-defaults/run.sh" 18 quarter 1 135847936
    else
      (cd "$co" && bin=build/bench/graph/graph_construct_bench &&
       "$bin" --scale 18 --threads 2 --page-sizes 4096 --modes quarter --timeout 400 --slack-mib 32 \
         --dir /tmp --buffer auto --csv "$here/construct$sfx.csv" --datastore-bytes 135847936 \
         --systems uffd --label "$tag$sfx-new-r$r-defaults" | tail -1)
    fi
  done
done
