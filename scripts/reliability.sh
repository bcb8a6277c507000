#!/usr/bin/env bash
# scripts/reliability.sh [--long] [--build-dir DIR] [--fuzz SECONDS] [--no-report]
#
# Runs the reliability campaigns and regenerates the table in tests/RELIABILITY.md:
#   store_create_crash_test        atomic creation: SIGKILL, crash at every op, power cut
#   rel_crash_point_test           PHEAP_FAULT_CRASH_AT=any:N / sync:N sweeps, crash during the
#                                  reopen, crash during snapshot
#   store_integrity_test           format 3: page-map checksums (page copies, map blocks, the
#                                  directory), map/directory/segment identity, stale copies
#   rel_bad_input_test             truncation, bit flips, zeroed blocks, swapped/missing files,
#                                  permissions (uid 65534), FIFOs/directories/devices in place
#                                  of every file of a datastore
#   rel_parser_regression_test     fuzzer findings
#   rel_full_disk_test             real ENOSPC on a loop-mounted ext4 image (root)
#   rel_graph_kill_test            kill -9 of pheap-graph ingest --flush-every; inputs changed
#                                  between the kill and the resume
#   rel_graph_limits_test          PHEAP_BUFFER_SIZE above a memory cgroup v1 limit (root),
#                                  RLIMIT_AS below the capacity
#   rel_heap_kill_test             kill -9 of a mixed heap workload (512 KiB buffer), flush-biased,
#                                  chained kills during the reopen, kills during close; the
#                                  same on 2 MiB pages mapped by 2 MiB entries (huge_pages)
#   rel_fault_read_error_test      EIO on the Nth read during page faults (also on huge pages)
#                                  and during the reopen
#   rel_fault_write_error_test     EIO/ENOSPC on the Nth write (also on huge pages), sync or
#                                  metadata operation of a heap
#                                  workload with snapshots, and of reopens after a crash
#   rel_check_scrub_test           `pheap check` reports a damaged data page
#   rel_snapshot_concurrency_test  snapshots and flushes racing many writer threads
#   rel_snapshot_fs_test           reflink snapshots on XFS/Btrfs loop images, sparse on ext4,
#                                  SIGKILL during snapshots (root)
#   rel_resource_limits_test       low RLIMIT_NOFILE, io_uring refused (incl. the real
#                                  kernel.io_uring_disabled=2: this script runs the campaigns
#                                  one at a time, so it sets PHEAP_GLOBAL_SYSCTL_TESTS=1),
#                                  uid 65534 with vm.unprivileged_userfaultfd=0
#   rel_readers_test               readers beside a writer: 1000+ reader opens whose whole-view CRCs
#                                  equal the writer's log, readers crashed at each I/O of an open
#                                  and SIGKILLed mid-read, the writer SIGKILLed under readers,
#                                  power cuts after every sync point with a reader attached
#   scripts/fuzz.sh                libFuzzer on the superblock, map block, directory, segment
#                                  header and root record parsers (--fuzz N;
#                                  default 0 = skipped, 600 with --long when clang is present)
# Default: CI size (about 3 minutes on 2 cores). --long: PHEAP_LONG=1 (≥ 2000 graph kills,
# every crash state, the io_uring sweep too) and 10 minutes of fuzzing per target.
#
# Every campaign prints "PHEAP_RESULT scenario=... iterations=... failures=... data_lost=...
# seconds=..." lines; this script collects them. Exit status: 0 only if every test binary
# passed and no scenario lost data.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

long=0 build="${PHEAP_BUILD_DIR:-build}" fuzz_seconds="" report=1
while [ $# -gt 0 ]; do
  case "$1" in
    --long) long=1 ;;
    --build-dir) build="$2"; shift ;;
    --fuzz) fuzz_seconds="$2"; shift ;;
    --no-report) report=0 ;;
    *) echo "usage: $0 [--long] [--build-dir DIR] [--fuzz SECONDS] [--no-report]" >&2; exit 2 ;;
  esac
  shift
done
if [ -z "$fuzz_seconds" ]; then
  fuzz_seconds=0
  [ $long -eq 1 ] && command -v clang++ >/dev/null && fuzz_seconds=600
fi
[ $long -eq 1 ] && export PHEAP_LONG=1
export PHEAP_GLOBAL_SYSCTL_TESTS=1  # campaigns run one at a time here (resource_limits_test)

tests=(store/store_create_crash_test store/store_integrity_test reliability/rel_crash_point_test
       reliability/rel_bad_input_test reliability/rel_parser_regression_test
       reliability/rel_full_disk_test reliability/rel_graph_kill_test reliability/rel_graph_limits_test
       reliability/rel_heap_kill_test reliability/rel_fault_read_error_test
       reliability/rel_fault_write_error_test reliability/rel_check_scrub_test
       reliability/rel_snapshot_concurrency_test reliability/rel_snapshot_fs_test
       reliability/rel_resource_limits_test reliability/rel_creation_fault_test
       reliability/rel_readers_test)
targets=()
for t in "${tests[@]}"; do targets+=("$(basename "$t")"); done

echo "== build ($build): ${targets[*]}"
cmake -S . -B "$build" -G Ninja >/dev/null || exit 1
cmake --build "$build" -j"${PHEAP_JOBS:-2}" --target "${targets[@]}" rel_store_child rel_heap_child rel_readers_child pheap_tool || exit 1

log="$build/reliability"
mkdir -p "$log"
results="$log/results.txt"
: >"$results"
status=0
failed_tests=()
start_all=$(date +%s)
for t in "${tests[@]}"; do
  bin="$build/tests/$t"
  name=$(basename "$t")
  echo "== $name"
  t0=$(date +%s)
  "$bin" --gtest_brief=1 >"$log/$name.log" 2>&1
  rc=$?
  grep '^PHEAP_RESULT ' "$log/$name.log" | sed "s/\$/ test=$name/" | tee -a "$results"
  grep -E '^\[  (FAILED|SKIPPED) +\]' "$log/$name.log" | grep -v 'listed below' | sort -u || true
  if [ $rc -ne 0 ]; then
    status=1
    while read -r f; do failed_tests+=("$f"); done < <(grep -E '^\[  FAILED  \] [A-Za-z]' "$log/$name.log" |
      grep -v 'listed below' | sed 's/^\[  FAILED  \] //; s/ (.*//' | sort -u)
  fi
  echo "   ($(( $(date +%s) - t0 )) s, exit $rc)"
done
if [ "$fuzz_seconds" -gt 0 ]; then
  echo "== fuzzing, ${fuzz_seconds}s per target"
  if scripts/fuzz.sh "$fuzz_seconds" >"$log/fuzz.log" 2>&1; then :; else status=1; failed_tests+=("scripts/fuzz.sh"); fi
  grep '^PHEAP_RESULT ' "$log/fuzz.log" | sed 's/$/ test=scripts\/fuzz.sh/' | tee -a "$results"
fi
total=$(( $(date +%s) - start_all ))

# Any scenario that lost data fails the run.
if awk '{for(i=1;i<=NF;i++) if ($i ~ /^data_lost=/) {split($i,a,"="); if (a[2] > 0) bad=1}} END {exit !bad}' "$results"; then
  status=1
fi

if [ $report -eq 1 ]; then
  md=tests/RELIABILITY.md
  table=$(mktemp)
  {
    echo "<!-- BEGIN GENERATED by scripts/reliability.sh: do not edit by hand -->"
    echo "Last run: $(date -u '+%Y-%m-%d %H:%M UTC'), $( [ $long -eq 1 ] && echo 'long mode (--long)' || echo 'CI size'), kernel $(uname -r), $(nproc) cores, ${total} s in total."
    echo
    echo "| scenario | iterations | failures | data lost | time (s) | test binary |"
    echo "|---|---:|---:|---:|---:|---|"
    awk '{ s=""; it=""; f=""; d=""; t=""; b="";
           for (i=2;i<=NF;i++) { split($i,a,"=");
             if (a[1]=="scenario") s=a[2]; else if (a[1]=="iterations") it=a[2];
             else if (a[1]=="failures") f=a[2]; else if (a[1]=="data_lost") d=a[2];
             else if (a[1]=="seconds") t=a[2]; else if (a[1]=="test") b=a[2]; }
           printf "| %s | %s | %s | %s | %s | %s |\n", s, it, f, d, t, b }' "$results"
    echo
    if [ ${#failed_tests[@]} -gt 0 ]; then
      echo "Failing tests in this run (each is a reported bug; see below):"
      echo
      for f in "${failed_tests[@]}"; do echo "- \`$f\`"; done
    else
      echo "Every test passed."
    fi
    echo "<!-- END GENERATED -->"
  } >"$table"
  if [ -f "$md" ] && grep -q 'BEGIN GENERATED' "$md"; then
    awk -v tf="$table" '
      /<!-- BEGIN GENERATED/ { while ((getline l < tf) > 0) print l; skip=1; next }
      /<!-- END GENERATED -->/ { skip=0; next }
      !skip { print }' "$md" >"$md.tmp" && mv "$md.tmp" "$md"
  else
    { echo "# Reliability campaigns"; echo; cat "$table"; } >"$md"
  fi
  rm -f "$table"
  echo "== wrote $md"
fi
echo "== reliability: $( [ $status -eq 0 ] && echo PASS || echo FAIL ) (${total} s)"
exit $status
