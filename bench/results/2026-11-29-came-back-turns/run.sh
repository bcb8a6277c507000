#!/usr/bin/env bash
# Run AF (issue 16): a page that comes back from the victim cache or from its eviction's
# write-back in flight gets kCameBackTurns more passes of the clock hand (page_table.hpp I9).
# The same machine state for both builds: BASE_CHECKOUT (the pager before, ce7b8e7) and
# NEW_CHECKOUT, alternating, ROUNDS rounds, base first in each (run AC's protocol):
#   tiny buffers: run AB's protocol and columns (bench/results/2026-11-28-tiny-concurrency/run.sh,
#     one round per call) -> tiny.csv, with a first column naming the build;
#   S18 at 1/4: run M's protocol (bench/results/2026-11-27-graph-defaults/run.sh, which runs
#     <checkout>/build/bench/graph/graph_construct_bench, so each build's own checkout runs it),
#     pheap defaults then mmap-random per call -> construct.csv (labels AF-base-…, AF-new-…).
# Usage: run.sh BASE_CHECKOUT NEW_CHECKOUT ROUNDS   (checkouts with build/ built; run AC's script,
# its CSVs written here, its labels AF-…)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
RUN_DIR=$here RUN_TAG=AF exec "$here/../2026-11-29-write-back-fills/run.sh" "$@"
