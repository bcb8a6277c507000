#!/usr/bin/env bash
# scripts/fuzz.sh [seconds] — builds the libFuzzer targets of fuzz/ with clang (build-fuzz/),
# generates their seed corpora from valid structures and runs each target for `seconds`
# (default 60). Corpora grow in build-fuzz/fuzz/corpus/<target>; a crash leaves its input in
# build-fuzz/fuzz/artifacts/<target>/ and makes the script fail.
#   Needs: apt-get install clang libclang-rt-14-dev
set -euo pipefail
seconds="${1:-60}"
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${PHEAP_FUZZ_BUILD_DIR:-$root/build-fuzz}"
jobs="${PHEAP_JOBS:-2}"

if ! command -v clang++ >/dev/null; then
  echo "fuzz.sh: clang++ not found (apt-get install clang libclang-rt-14-dev)" >&2
  exit 2
fi
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPHEAP_BUILD_FUZZERS=ON -DPHEAP_BUILD_TESTS=OFF \
  -DPHEAP_BUILD_BENCH=OFF -DPHEAP_BUILD_EXAMPLES=OFF -DPHEAP_BUILD_TOOLS=OFF >/dev/null
cmake --build "$build" -j"$jobs" --target fuzz_superblock fuzz_map_block fuzz_directory fuzz_segment_header \
  fuzz_root_record pheap_fuzz_seeds

work="$build/fuzz"
seeds="$work/seeds"
rm -rf "$seeds"
"$build/fuzz/pheap_fuzz_seeds" "$seeds"

status=0
for target in superblock map_block directory segment_header root_record; do
  corpus="$work/corpus/$target"
  artifacts="$work/artifacts/$target"
  mkdir -p "$corpus" "$artifacts"
  echo "== fuzz_$target for ${seconds}s"
  start=$(date +%s)
  if "$build/fuzz/fuzz_$target" "$corpus" "$seeds/$target" -max_total_time="$seconds" \
       -artifact_prefix="$artifacts/" -print_final_stats=1 >"$work/$target.log" 2>&1; then
    result=0
  else
    result=1
    status=1
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/$target.log" | grep -o '[0-9]*$' || echo 0)
  elapsed=$(( $(date +%s) - start ))
  echo "PHEAP_RESULT scenario=fuzz_${target} iterations=${runs:-0} failures=${result} data_lost=0 seconds=${elapsed}"
  if [ "$result" -ne 0 ]; then
    echo "fuzz_$target found a crash; input in $artifacts:" >&2
    grep -E 'ERROR|SUMMARY|==[0-9]+==|Test unit written' "$work/$target.log" | head -20 >&2 || true
  fi
done
exit $status
