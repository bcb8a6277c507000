#!/usr/bin/env python3
"""bench/offcpu.py — a time-weighted off-CPU profile of one command: where its threads wait,
in seconds, not in numbers of context switches.

    bench/offcpu.py [--data FILE] [--top N] -- COMMAND [ARGS...]   record, then report
    bench/offcpu.py --data FILE --no-report -- COMMAND [ARGS...]    record only (keeps the
                                                                    report's minutes out of a
                                                                    timed run)
    bench/offcpu.py --report FILE [--top N]                         report a recording

Recording: `perf record -e sched:sched_switch --call-graph dwarf --switch-events` on COMMAND
and every thread and child it starts. Each switch-out of a traced thread carries its kernel
and user call chain; `--switch-events` adds the thread's own switch-in records, so the time
off CPU of every switch-out is exact: from it to the same thread's next switch-in.

Report: per thread role (the thread's name without trailing digits: pheap-fault0 and
pheap-fault1 are one role; io_uring workers `iou-wrk-N` are `iou-wrk-`), its total time off CPU
and the sites that took it, largest first. A site is the kind of wait and where:
  - `preempted`: the thread was runnable and another took the CPU (machine contention);
  - otherwise the state (S sleep, D disk), the system call or fault the kernel was serving,
    the first kernel frame that is not scheduler plumbing (the wait itself: `submit_bio_wait`
    for a discard or a sync waiting for the device, `folio_wait_bit`, `futex_do_wait`,
    `io_cqring_wait`, `ext4_fallocate` for its inode lock, ...), and the
    innermost frames of pheap's own code (`pheap::`) in the user call chain.
Caveats: dwarf unwinding copies 8 KiB of stack per switch-out, so deep user chains are cut
(the innermost pheap frames survive, the callers may not); the recording is large (tens of MB
per second of a busy process). Idle helper threads (a fault thread waiting for faults, an
evictor waiting for work) are off CPU by design: read a role's time against the wall time.
Needs perf with permission to record tracepoints (root, or kernel.perf_event_paranoid ≤ -1).
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Kernel frames that say how a thread sleeps, not why: skipped when naming the wait.
PLUMBING = re.compile(
    r'^(__schedule|schedule\w*|preempt_schedule\w*|io_schedule\w*|__cond_resched|'
    r'rwsem_down_\w+|down_(read|write)\w*|__mutex_lock\w*|mutex_lock\w*|bit_wait\w*|'
    r'__wait_on_bit\w*|out_of_line_wait_on_bit\w*|wait_for_completion\w*|__wait_for_common|'
    r'do_wait_for_common|futex_wait_queue|__futex_wait|do_futex|__x64_sys_\w+|do_syscall_64|'
    r'x64_sys_call|entry_SYSCALL\w*|irqentry_exit\w*|asm_\w+|exit_to_user_mode\w*|'
    r'syscall_exit\w*|\[unknown\])$')
SYSCALL = re.compile(r'^__(?:x64|do)_sys_(\w+)$')
FAULT = re.compile(r'^(handle_userfault|handle_mm_fault|do_user_addr_fault|exc_page_fault)$')
EVENT = re.compile(r'^\s*(\S.*?)\s+(\d+)\s+([\d.]+):\s+(.*)$')
SWITCH = re.compile(r'prev_pid=(\d+) .*prev_state=(\S+)')


def role(comm):
    return re.sub(r'\d+$', '', comm)


def site_of(state, frames):
    """frames: innermost first, (address, symbol)."""
    if state.startswith('R'):
        return 'preempted'
    syms = [s for _, s in frames]
    call = next((m[1] for m in map(SYSCALL.match, syms) if m), None)
    if call is None:
        call = 'fault' if any(FAULT.match(s) for s in syms) else 'kernel'
    wait = next((s for s in syms if not PLUMBING.match(s)), '?')
    ours = [s for s in syms if s.startswith('pheap::')]
    ours = [re.sub(r'\(.*$', '', s) for s in ours[:3]]
    return f'[{state[0]}] {call}: {wait}' + (' < ' + ' < '.join(ours) if ours else '')


def fail(why):
    print(f'offcpu.py: {why}', file=sys.stderr)
    sys.exit(1)


def report(data, top, out=sys.stdout):
    p = subprocess.run(
        ['perf', 'script', '-i', data, '--show-switch-events', '-F', 'comm,tid,time,event,trace,ip,sym'],
        capture_output=True, text=True)
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ['no message'])[-1]
        fail(f'perf script could not read {data} (exit {p.returncode}): {last}')
    script = p.stdout
    names = {}                      # tid -> comm
    left = {}                       # tid -> (time, site): off CPU since
    pending = None                  # the switch-out whose call chain is being read
    total = collections.Counter()   # (role, site) -> seconds
    count = collections.Counter()
    first = last = None

    def close_pending():
        nonlocal pending
        if pending is not None:
            tid, t, state, frames = pending
            left[tid] = (t, site_of(state, frames))
            pending = None

    for line in script.splitlines():
        m = EVENT.match(line)
        if m is None:
            if pending is not None and line.strip():
                parts = line.split(None, 1)
                if len(parts) == 2:
                    pending[3].append((parts[0], parts[1].strip()))
            continue
        close_pending()
        comm, tid, t, rest = m[1], int(m[2]), float(m[3]), m[4]
        names[tid] = comm
        first = t if first is None else first
        last = t
        if rest.startswith('sched:sched_switch:'):
            s = SWITCH.search(rest)
            if s and int(s[1]) == tid:
                pending = (tid, t, s[2], [])
        elif rest.startswith('PERF_RECORD_SWITCH IN') or rest.startswith('PERF_RECORD_SWITCH_CPU_WIDE IN'):
            if tid in left:
                t0, site = left.pop(tid)
                total[(role(names[tid]), site)] += t - t0
                count[(role(names[tid]), site)] += 1
    close_pending()
    span = (last - first) if first is not None else 0.0
    by_role = collections.Counter()
    threads = collections.defaultdict(set)
    for (r, _), v in total.items():
        by_role[r] += v
    for tid, comm in names.items():
        threads[role(comm)].add(tid)
    print(f'recording {data}: {span:.2f} s of wall time; time off CPU per thread role, then its sites', file=out)
    for r, v in by_role.most_common():
        print(f'\n== {r} ({len(threads[r])} thread(s)): {v:.3f} s off CPU', file=out)
        rows = sorted(((s, k) for k, s in total.items() if k[0] == r), reverse=True)[:top]
        for s, k in rows:
            print(f'  {s:8.3f} s {100 * s / v:5.1f} %  {count[k]:7d}x  {k[1]}', file=out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--report', metavar='FILE', help='report an existing recording')
    ap.add_argument('--data', metavar='FILE', help='where to keep the recording (default: a temporary file)')
    ap.add_argument('--top', type=int, default=12, help='sites per thread role (default 12)')
    ap.add_argument('--no-report', action='store_true', help='record only (needs --data)')
    ap.add_argument('command', nargs=argparse.REMAINDER)
    a = ap.parse_args()
    if shutil.which('perf') is None:
        fail('perf is not on PATH (Debian: linux-perf)')
    if a.report:
        report(a.report, a.top)
        return 0
    cmd = a.command[1:] if a.command[:1] == ['--'] else a.command
    if not cmd:
        ap.error('a COMMAND to record (after --), or --report FILE')
    if a.no_report and a.data is None:
        ap.error('--no-report needs --data FILE (where to keep the recording)')
    tmp = None
    data = a.data
    if data is None:
        tmp = tempfile.NamedTemporaryFile(prefix='offcpu.', suffix='.data', delete=False)
        data = tmp.name
        tmp.close()
    try:
        rc = subprocess.run(['perf', 'record', '-q', '-e', 'sched:sched_switch', '--call-graph', 'dwarf,8192',
                             '--switch-events', '-o', data, '--'] + cmd).returncode
        if rc != 0:
            print(f'offcpu.py: the command (or perf) exited with status {rc}', file=sys.stderr)
        if not a.no_report:
            report(data, a.top)
        return rc
    finally:
        if tmp is not None:
            os.unlink(data)


if __name__ == '__main__':
    sys.exit(main())
