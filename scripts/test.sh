#!/usr/bin/env bash
# The whole test suite: the command README and CI run. `scripts/test.sh --help` prints the
# stages below with what each costs, and starts nothing.
#
#   scripts/test.sh            normal build + ASan/UBSan build run unprivileged + TSan build
#                              + a short fuzzing run
#   scripts/test.sh --quick    the normal build (without the benchmarks) and its tests only
#
# Stages:
#   layering      scripts/check_layers.sh: every include points down the layer stack or stays
#                 in its room (counts as one test)
#   release       build/, every test, as the invoking user (root in CI: tests labelled `root`
#                 — loop mounts, sysctl writes, switching to uid 65534 — run here, and only here)
#   asan+ubsan    build-asan/ (Debug at -O1), every test but those labelled no_asan (the
#                 process-limit tests, whose limits ASan's own memory defeats), root, mpi,
#                 compile and scripts (the release stage runs them all: the compile-time and
#                 script checks do not depend on the build's flags, and the MPI jobs, a third of
#                 this stage's time under ASan, run at full speed there); long campaigns run a
#                 fraction of their iterations under a sanitizer (tests/common/test_util.hpp,
#                 sanitized_or).
#                 Run unprivileged: as uid/gid 65534 (nobody/nogroup, no supplementary groups,
#                 no capabilities) with vm.unprivileged_userfaultfd=0, so the pager must get
#                 userfaultfd with UFFD_USER_MODE_ONLY (PHEAP_EXPECT_UNPRIVILEGED=1 makes
#                 PagerUffd.SourceIsThePathThisProcessIsAllowed assert it). HOME and TMPDIR point
#                 at a fresh 0700 directory owned by 65534; the sysctl's old value is restored on
#                 exit, INT, TERM and HUP (trap). Without root it runs as the invoking user and
#                 says so (a failure under CI=true). This stage was a second run of build/'s
#                 tests until that made CI longer than its 90 minutes: one run now proves both
#                 the unprivileged path and the sanitizers.
#                 The label `mpi` (tests/mpi: jobs under mpirun, Open MPI from scripts/deps.sh)
#                 runs in the release stage (as root: with --allow-run-as-root). A build that
#                 did not find MPI has no such tests: a failure under CI=true.
#   python        the Python package (python/): a venv of its own (build/python-venv, made with
#                 the python3 on PATH; python3-venv from Debian if it cannot), NumPy, pytest and
#                 matplotlib (for the example's test) from PyPI, `pip install ./python` (builds the
#                 extension against this tree), then
#                 pytest python/tests against build/'s tools. A skipped test counts as a failure
#                 under CI=true. Not in --quick (the package build takes minutes).
#   tsan          build-tsan/, tests labelled `concurrency` (only their binaries are built)
#   fuzz          build-fuzz/ (clang), each parser fuzzer of fuzz/ for PHEAP_FUZZ_SECONDS (30)
# Every stage's temporary files (the tests' datastores, installed packages of the consumer
# tests, logs) live in one directory made for the run (under TMPDIR or /tmp) and removed when
# the script exits, also when it is interrupted (INT, TERM, HUP).
# Exit status is non-zero if any build or any test fails; 2 for an unknown option. Under
# CI=true, tests that need a kernel feature (userfaultfd, io_uring) fail instead of skipping
# when it is missing.
set -uo pipefail
cd "$(dirname "$0")/.."

usage() {
  cat <<'USAGE'
usage: scripts/test.sh [--quick] [--help]

Runs pheap's test suite, stage by stage (costs measured on the 2-core development VM; a build
from scratch, otherwise only what changed is rebuilt):

  layering      scripts/check_layers.sh: the include rule between layers        seconds
  release       build/ (RelWithDebInfo, -g1): configure and build everything,    build 17 min,
                then every test as you; as root also the tests labelled root      tests 15 min
                (loop mounts, cgroups, sysctls, uid switches)
  python        the Python package in a venv, its pytest suite                    3 min
  asan+ubsan    build-asan/ (Debug -O1, ASan+UBSan), all tests but those          build 21 min,
                labelled no_asan, root, mpi, compile, scripts (release runs       tests 11 min
                them), as uid 65534 with vm.unprivileged_userfaultfd=0
                (restored afterwards) when run as root, else as you
  tsan          build-tsan/, only the tests labelled concurrency                  build 5 min,
                                                                                  tests 6 min
  fuzz          build-fuzz/ (clang), 30 s per parser fuzzer (PHEAP_FUZZ_SECONDS)  3-5 min
  In all 75-85 minutes on 2 cores from scratch (CI allows 90; measured 2026-12-08,
  before mpi, compile and scripts left the asan+ubsan stage, at 89).

Options:
  --quick   layering and release only, building what the tests need (no benchmarks):
            about 30-40 minutes from scratch, minutes after a change
  --help    print this and exit; nothing is built, run or changed

Before building, scripts/deps.sh installs missing Debian packages (as root). Temporary files
live in one directory removed when the script exits or is interrupted. Exit status: 0 when
every stage passed, 1 when a build or a test failed, 2 for an unknown option.
USAGE
}

quick=0
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "scripts/test.sh: unknown option '$arg'" >&2; usage >&2; exit 2 ;;
  esac
done

scripts/deps.sh || exit 1

# One directory for every temporary file of the run (the tests use TMPDIR), removed on exit.
run_tmp=$(mktemp -d "${TMPDIR:-/tmp}/pheap-test-run.XXXXXX") || exit 1
chmod 0755 "$run_tmp"  # the unprivileged stage's uid must reach its own directory inside
export TMPDIR=$run_tmp

jobs=$(nproc)
total_pass=0 total_fail=0 total_skip=0 status=0
# Every failed test's name and the tail of its output, gathered per stage and printed again at
# the very end: CI shows only the last lines of this script's output.
failures=$(mktemp)

# build_stage NAME BUILD_DIR [cmake args...]: returns non-zero (and counts a failure) if the
# build fails.
build_stage() {
  local name=$1 dir=$2; shift 2
  echo "=== $name: build ($dir) ==="
  local start=$SECONDS
  if ! scripts/build.sh "$dir" "$@"; then
    echo "=== $name: BUILD FAILED ===" >&2
    status=1
    total_fail=$((total_fail + 1))
    return 1
  fi
  echo "=== $name: built in $((SECONDS - start)) s ==="
}

# test_stage NAME BUILD_DIR "ctest args" [command prefix...]: runs ctest (behind the prefix,
# e.g. setpriv) and adds its counts to the totals.
test_stage() {
  local name=$1 dir=$2 ctest_args=$3; shift 3
  echo "=== $name: test ==="
  local log start
  log=$(mktemp)
  start=$SECONDS
  # shellcheck disable=SC2086
  "$@" ctest --test-dir "$dir" --output-on-failure -j"$jobs" $ctest_args 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local line pass fail skip all
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
    echo "=== $name: $pass passed, $fail failed, $skip skipped in $((SECONDS - start)) s ==="
  fi
  collect_failures "$name" "$log"
  [ "$rc" -eq 0 ] || status=1
  rm -f "$log"
}

# collect_failures STAGE LOG: appends, for each test ctest marked failed (or timed out) in LOG,
# "STAGE: the result line", then from the output ctest printed for it (--output-on-failure
# prints it right after the result line, before the next test's line) the first 15 lines that
# look like a failure (gtest's, an exception's, a sanitizer's) and the last 15 lines.
collect_failures() {
  awk -v stage="$1" '
    function flush(  i, k) {
      if (!n) return
      k = 0
      for (i = 1; i <= n - 15 && k < 15; i++)
        if (buf[i] ~ /Failure|FAILED|[Ee]rror|Expected|Which is|Value of|Actual|what\(\)|terminate|Sanitizer|SUMMARY/) { print "    " buf[i]; k++ }
      if (n > 15) print "    ..."
      for (i = (n > 15 ? n - 15 + 1 : 1); i <= n; i++) print "    " buf[i]
      n = 0
    }
    /^ *[0-9]+\/[0-9]+ Test +#[0-9]+: / || /^ *Start +[0-9]+: / || /tests passed, [0-9]+ tests? failed out of/ {
      flush(); inblock = 0
      if ($0 ~ /\*\*\*(Failed|Timeout|Exception)| Failed +[0-9.]+ sec|Not Run/) { print stage ": " $0; inblock = 1 }
      next
    }
    inblock { buf[++n] = $0 }
    END { flush() }' "$2" >>"$failures"
}

# run_stage NAME BUILD_DIR "ctest args" [cmake args...]
run_stage() {
  local name=$1 dir=$2 ctest_args=$3; shift 3
  build_stage "$name" "$dir" "$@" || return 1
  test_stage "$name" "$dir" "$ctest_args"
}

# The unprivileged stage's state, undone by unpriv_cleanup on every exit path (trap below).
unpriv_knob=/proc/sys/vm/unprivileged_userfaultfd
unpriv_saved="" unpriv_tmp="" unpriv_testing="" unpriv_testing_owner=""
unpriv_cleanup() {
  if [ -n "$unpriv_saved" ]; then
    if echo "$unpriv_saved" >"$unpriv_knob" 2>/dev/null; then
      echo "=== vm.unprivileged_userfaultfd restored to $unpriv_saved ==="
    else
      echo "=== could not restore vm.unprivileged_userfaultfd to $unpriv_saved ===" >&2
    fi
    unpriv_saved=""
  fi
  if [ -n "$unpriv_tmp" ]; then rm -rf "$unpriv_tmp"; unpriv_tmp=""; fi
  if [ -n "$unpriv_testing" ]; then
    chown -R "$unpriv_testing_owner" "$unpriv_testing" 2>/dev/null
    unpriv_testing=""
  fi
}
run_cleanup() {
  unpriv_cleanup
  if [ -n "${run_tmp:-}" ]; then rm -rf "$run_tmp"; run_tmp=""; fi
}
trap run_cleanup EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# unprivileged_stage NAME BUILD_DIR "ctest args": BUILD_DIR's tests as uid/gid 65534,
# vm.unprivileged_userfaultfd=0. Without the privilege to switch, as the invoking user (a
# failure under CI=true, which must prove the unprivileged path).
unprivileged_stage() {
  local name=$1 dir=$2 ctest_args=$3 id=65534  # nobody:nogroup
  local why=""
  if [ "$(id -u)" -ne 0 ]; then
    why="not root (needs to set vm.unprivileged_userfaultfd and switch to uid $id)"
  elif ! command -v setpriv >/dev/null; then
    why="setpriv (util-linux) missing"
  elif [ ! -w "$unpriv_knob" ]; then
    why="$unpriv_knob missing or read-only"
  fi
  if [ -n "$why" ]; then
    if [ "${CI:-}" = true ] || [ "${CI:-}" = 1 ]; then
      echo "=== $name: CANNOT RUN unprivileged under CI: $why ===" >&2
      status=1
      total_fail=$((total_fail + 1))
    else
      echo "=== $name: as $(id -un), not uid $id: $why (a failure under CI=true) ==="
    fi
    test_stage "$name" "$dir" "$ctest_args"
    return
  fi
  local as=(setpriv --reuid=$id --regid=$id --clear-groups)
  # The tests must be readable and runnable by that user; ctest writes its logs to Testing/.
  chmod -R a+rX "$dir"
  if ! "${as[@]}" test -r "$dir/CTestTestfile.cmake" -a -x "$dir/tests"; then
    echo "=== $name: $dir is not reachable by uid $id (a parent directory's mode?) ===" >&2
    status=1
    total_fail=$((total_fail + 1))
    return
  fi
  mkdir -p "$dir/Testing/Temporary"
  unpriv_testing_owner=$(stat -c %u:%g "$dir/Testing")
  unpriv_testing="$dir/Testing"
  chown -R $id:$id "$dir/Testing"
  unpriv_tmp=$(mktemp -d "${TMPDIR:-/tmp}/pheap-unprivileged.XXXXXX")
  chown $id:$id "$unpriv_tmp"
  chmod 0700 "$unpriv_tmp"
  if ! "${as[@]}" test -w "$unpriv_tmp" -a -x "$unpriv_tmp"; then
    echo "=== $name: $unpriv_tmp is not reachable by uid $id (set TMPDIR) ===" >&2
    status=1
    total_fail=$((total_fail + 1))
    unpriv_cleanup
    return
  fi
  unpriv_saved=$(cat "$unpriv_knob")
  if ! echo 0 >"$unpriv_knob" || [ "$(cat "$unpriv_knob")" != 0 ]; then
    echo "=== $name: could not set vm.unprivileged_userfaultfd=0 ===" >&2
    status=1
    total_fail=$((total_fail + 1))
    unpriv_cleanup
    return
  fi
  echo "=== $name: uid/gid $id, vm.unprivileged_userfaultfd=0 (was $unpriv_saved), TMPDIR=$unpriv_tmp ==="
  test_stage "$name" "$dir" "$ctest_args" \
    "${as[@]}" env HOME="$unpriv_tmp" TMPDIR="$unpriv_tmp" USER=nobody LOGNAME=nobody \
    PHEAP_EXPECT_UNPRIVILEGED=1
  unpriv_cleanup
}

# fuzz: the libFuzzer targets of fuzz/ (superblock, map block, directory, segment header, root record
# parsers; clang, ASan+UBSan) for PHEAP_FUZZ_SECONDS each (default 30) from their seed corpora.
# Each target counts as one test.
fuzz_stage() {
  local secs=${PHEAP_FUZZ_SECONDS:-30} log
  echo "=== fuzz: ${secs}s per target (build-fuzz/) ==="
  if ! scripts/deps.sh clang libclang-rt-14-dev; then
    echo "=== fuzz: clang/libFuzzer could not be installed ===" >&2
    status=1; total_fail=$((total_fail + 1)); return
  fi
  log=$(mktemp)
  scripts/fuzz.sh "$secs" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]} pass fail
  pass=$(grep -c '^PHEAP_RESULT scenario=fuzz_.* failures=0 ' "$log" || true)
  fail=$(grep '^PHEAP_RESULT scenario=fuzz_' "$log" | grep -vc ' failures=0 ' || true)
  if [ "$rc" -ne 0 ] && [ "$fail" -eq 0 ]; then fail=1; fi  # a build failure prints no result
  echo "=== fuzz: $pass passed, $fail failed ==="
  total_pass=$((total_pass + pass)); total_fail=$((total_fail + fail))
  [ "$rc" -eq 0 ] || status=1
  rm -f "$log"
}

# mpi_label_check BUILD_DIR: the `mpi` label exists (CMake found MPI), else a failure in CI.
mpi_label_check() {
  local n
  n=$(ctest --test-dir "$1" -N -L '^mpi$' | grep -cE 'Test +#' || true)
  if [ "$n" -gt 0 ]; then
    echo "=== mpi: $n tests in $1 (label mpi) ==="
  elif [ "${CI:-}" = true ] || [ "${CI:-}" = 1 ]; then
    echo "=== mpi: no tests labelled mpi in $1 under CI: CMake did not find MPI (scripts/deps.sh) ===" >&2
    status=1
    total_fail=$((total_fail + 1))
  else
    echo "=== mpi: not built (CMake did not find MPI; a failure under CI=true) ==="
  fi
}

# python_stage BUILD_DIR: the Python package's pytest suite against BUILD_DIR's tools.
python_stage() {
  local dir=$1 venv=$1/python-venv log rc line n pass fail skip err
  echo "=== python: venv $venv, pip install ./python, pytest python/tests ==="
  if [ ! -x "$venv/bin/python" ] && ! python3 -m venv "$venv"; then
    # Debian's python3 needs python3-venv (and pip) for a venv
    rm -rf "$venv"
    scripts/deps.sh python3-venv python3-pip python3-dev && python3 -m venv "$venv"
  fi
  # the extension's build needs the interpreter's headers (Debian: python3-dev; pyenv has them)
  if [ -x "$venv/bin/python" ] && ! "$venv/bin/python" -c \
      'import os, sysconfig, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; then
    scripts/deps.sh python3-dev
  fi
  if [ ! -x "$venv/bin/python" ] ||
     ! "$venv/bin/python" -m pip install -q numpy pytest matplotlib ||
     ! nice -n 10 "$venv/bin/python" -m pip install -q ./python; then
    echo "=== python: COULD NOT INSTALL the package or its test requirements ===" >&2
    status=1; total_fail=$((total_fail + 1)); return
  fi
  log=$(mktemp)
  PHEAP_BUILD_DIR="$dir" "$venv/bin/python" -m pytest python/tests -q -rfEs -p no:cacheprovider 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  line=$(grep -E '^[=]* ?[0-9]+ (passed|failed|error)' "$log" | tail -1)
  n() { grep -oE "[0-9]+ $1" <<<"$line" | grep -oE '^[0-9]+' || echo 0; }
  pass=$(n passed); fail=$(n failed); skip=$(n skipped); err=$(n error)
  fail=$((fail + err))
  if [ -z "$line" ]; then
    echo "=== python: pytest ran no test ===" >&2
    fail=$((fail + 1))
  fi
  if [ "$skip" -gt 0 ] && { [ "${CI:-}" = true ] || [ "${CI:-}" = 1 ]; }; then
    echo "=== python: $skip test(s) skipped under CI: a failure ===" >&2
    fail=$((fail + skip)); skip=0
  fi
  echo "=== python: $pass passed, $fail failed, $skip skipped ==="
  total_pass=$((total_pass + pass)); total_fail=$((total_fail + fail)); total_skip=$((total_skip + skip))
  [ "$rc" -eq 0 ] && [ "$fail" -eq 0 ] || status=1
  [ "$fail" -eq 0 ] || grep -E '^(FAILED|ERROR) ' "$log" | sed 's/^/python: /' >>"$failures"
  rm -f "$log"
}

echo "=== layering ==="
if scripts/check_layers.sh; then
  total_pass=$((total_pass + 1))
else
  total_fail=$((total_fail + 1)); status=1
fi

release_built=0
# Line tables only (-g1): backtraces keep file:line; compiles are about a third shorter than -g.
release_args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")
# --quick builds what its tests need: no benchmarks (most of a fresh build's time otherwise).
if [ "$quick" -eq 1 ]; then release_args+=(-DPHEAP_BUILD_BENCH=OFF); else release_args+=(-DPHEAP_BUILD_BENCH=ON); fi
build_stage "release" build "${release_args[@]}" && release_built=1
if [ "$release_built" -eq 1 ]; then
  test_stage "release" build ""  # as root in CI: includes the tests labelled `root`
  mpi_label_check build
fi
if [ "$quick" -eq 0 ]; then
  if [ "$release_built" -eq 1 ]; then
    python_stage build
  fi
  # Sanitizer builds: -O1 under ASan (Debug keeps the assertions and invariant checkers; this
  # stage's tests took 25 minutes on 2 cores at -O0, 9 at -O1 with the campaigns scaled down)
  # and line tables only (-g1: reports keep file:line, the compiles and links are shorter).
  # TSan builds only the binaries it runs.
  # Its tests run unprivileged (uid 65534, vm.unprivileged_userfaultfd=0): the `root` tests ran
  # in the release stage, as did `mpi`, `compile` and `scripts` (see the stages above).
  if build_stage "asan+ubsan" build-asan -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" \
      -DPHEAP_SANITIZE=address,undefined -DPHEAP_BUILD_BENCH=OFF -DPHEAP_BUILD_EXAMPLES=OFF; then
    unprivileged_stage "asan+ubsan" build-asan "-LE ^(no_asan|root|mpi|compile|scripts)$"
  fi
  run_stage "tsan" build-tsan "-L concurrency" --target pheap_concurrency_tests \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" \
    -DPHEAP_SANITIZE=thread -DPHEAP_BUILD_BENCH=OFF -DPHEAP_BUILD_EXAMPLES=OFF
  fuzz_stage
fi

if [ -s "$failures" ]; then
  echo "=== failed tests, every stage (each with the end of its output) ==="
  cat "$failures"
fi
echo "all stages: $total_pass passed, $total_fail failed, $total_skip skipped in $SECONDS s"
exit $status
