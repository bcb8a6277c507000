#!/usr/bin/env bash
# The whole test suite: the command README and CI run.
#
#   scripts/test.sh            normal build + ASan/UBSan build + TSan build (concurrency suites)
#   scripts/test.sh --quick    normal build only
#
# Each stage builds its own tree (build/, build-asan/, build-tsan/) and runs ctest there.
# Exit status is non-zero if any build or any test fails. Under CI=true, tests that need a
# kernel feature (userfaultfd, io_uring) fail instead of skipping when it is missing.
set -uo pipefail
cd "$(dirname "$0")/.."

quick=0
[ "${1:-}" = "--quick" ] && quick=1

scripts/deps.sh || exit 1

jobs=$(nproc)
total_pass=0 total_fail=0 total_skip=0 status=0

# run_stage NAME BUILD_DIR "ctest args" [cmake args...]
run_stage() {
  local name=$1 dir=$2 ctest_args=$3; shift 3
  echo "=== $name: build ($dir) ==="
  if ! scripts/build.sh "$dir" "$@"; then
    echo "=== $name: BUILD FAILED ===" >&2
    status=1
    total_fail=$((total_fail + 1))
    return
  fi
  echo "=== $name: test ==="
  local log
  log=$(mktemp)
  # shellcheck disable=SC2086
  ctest --test-dir "$dir" --output-on-failure -j"$jobs" $ctest_args 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local line pass fail skip
  line=$(grep -E 'tests passed, [0-9]+ tests? failed out of' "$log" | tail -1)
  if [ -z "$line" ]; then
    echo "=== $name: ctest ran no test ===" >&2
    status=1
    total_fail=$((total_fail + 1))
  else
    fail=$(sed -E 's/.* ([0-9]+) tests? failed out of.*/\1/' <<<"$line")
    all=$(sed -E 's/.*failed out of ([0-9]+).*/\1/' <<<"$line")
    skip=$(grep -cE 'Test +#[0-9]+: .*\*\*\*Skipped' "$log" || true)  # DISABLED_ tests are not in ctest's count
    pass=$((all - fail - skip))
    total_pass=$((total_pass + pass)); total_fail=$((total_fail + fail)); total_skip=$((total_skip + skip))
  fi
  [ "$rc" -eq 0 ] || status=1
  rm -f "$log"
}

run_stage "release" build "" -DCMAKE_BUILD_TYPE=RelWithDebInfo
if [ "$quick" -eq 0 ]; then
  run_stage "asan+ubsan" build-asan "" -DCMAKE_BUILD_TYPE=Debug \
    -DPHEAP_SANITIZE=address,undefined -DPHEAP_BUILD_BENCH=OFF -DPHEAP_BUILD_EXAMPLES=OFF
  run_stage "tsan" build-tsan "-L concurrency" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DPHEAP_SANITIZE=thread -DPHEAP_BUILD_BENCH=OFF -DPHEAP_BUILD_EXAMPLES=OFF
fi

echo "all stages: $total_pass passed, $total_fail failed, $total_skip skipped"
exit $status
