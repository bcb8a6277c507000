#!/usr/bin/env bash
# scripts/test.sh as a user meets it, without running the suite: every command it could start
# (cmake, ctest, ninja, apt-get, setpriv, sysctl) is a shim on PATH that records its call.
#   test_sh_test.sh REPO help|unknown|killed
#     help     --help: exit 0, every stage and --quick described (and which one runs as uid
#              65534), nothing started, the
#              vm.unprivileged_userfaultfd knob untouched, nothing left in TMPDIR
#     unknown  a mistyped option: usage on stderr, exit 2, nothing started
#     killed   --quick interrupted (TERM to its process group) while "building": nothing is
#              left in TMPDIR
set -uo pipefail
repo=$1 case=$2
scratch=$(mktemp -d "${TMPDIR:-/tmp}/pheap-test-sh.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
shims=$scratch/bin tmp=$scratch/tmp
mkdir -p "$shims" "$tmp"
for c in cmake ctest ninja apt-get setpriv sysctl; do
  cat >"$shims/$c" <<SHIM
#!/bin/sh
echo "$c \$*" >>"$scratch/started"
[ "$c" = cmake ] && [ -n "\${PHEAP_SHIM_BLOCK:-}" ] && exec sleep 600
exit 0
SHIM
  chmod +x "$shims/$c"
done
knob=/proc/sys/vm/unprivileged_userfaultfd
knob_before=$(cat "$knob" 2>/dev/null || echo absent)
fail() { echo "FAIL: $*" >&2; exit 1; }
nothing_started() { [ ! -e "$scratch/started" ] || fail "it started: $(cat "$scratch/started")"; }
knob_kept() { [ "$(cat "$knob" 2>/dev/null || echo absent)" = "$knob_before" ] || fail "vm.unprivileged_userfaultfd changed"; }
tmp_empty() { [ -z "$(ls -A "$tmp")" ] || fail "left in TMPDIR: $(ls -A "$tmp")"; }

case $case in
  help)
    out=$(PATH="$shims:$PATH" TMPDIR=$tmp timeout 60 "$repo/scripts/test.sh" --help 2>&1); rc=$?
    [ $rc -eq 0 ] || fail "--help exited $rc: $out"
    for stage in layering release python asan+ubsan tsan fuzz --quick; do
      grep -q -- "^  $stage " <<<"$out" || fail "--help does not describe $stage: $out"
    done
    grep -q "as uid 65534 with vm.unprivileged_userfaultfd=0" <<<"$out" ||
      fail "--help does not say which stage runs unprivileged: $out"
    grep -q "min" <<<"$out" || fail "--help gives no costs: $out"
    nothing_started; knob_kept; tmp_empty
    ;;
  unknown)
    err=$(PATH="$shims:$PATH" TMPDIR=$tmp timeout 60 "$repo/scripts/test.sh" --quik 2>&1 >/dev/null); rc=$?
    [ $rc -eq 2 ] || fail "a mistyped option exited $rc: $err"
    grep -q "unknown option '--quik'" <<<"$err" || fail "no usage error: $err"
    grep -q "^usage: scripts/test.sh" <<<"$err" || fail "no usage: $err"
    nothing_started; knob_kept; tmp_empty
    ;;
  killed)
    PATH="$shims:$PATH" TMPDIR=$tmp PHEAP_SHIM_BLOCK=1 setsid "$repo/scripts/test.sh" --quick \
      >"$scratch/log" 2>&1 &
    pid=$!
    for _ in $(seq 1 1200); do  # until its build starts (deadline 120 s), or it ends first
      grep -q "^cmake " "$scratch/started" 2>/dev/null && break
      kill -0 "$pid" 2>/dev/null || break  # e.g. scripts/deps.sh found packages missing (non-root)
      sleep 0.1
    done
    grep -q "^cmake " "$scratch/started" 2>/dev/null || fail "the build never started: $(cat "$scratch/log")"
    [ -n "$(ls -A "$tmp")" ] || fail "the run made no temporary directory (TMPDIR ignored?)"
    kill -TERM -- "-$pid"
    wait "$pid"
    tmp_empty
    ;;
  *) fail "unknown case $case" ;;
esac
echo "PASS: $case"
