#!/usr/bin/env python3
"""Run AB's scheduler profile, split (sched-profile.txt): for each given thread of a
`perf sched record -g` file, its time on a CPU, its time off a CPU (of which runnable) and the
off-CPU time by where the thread went to sleep.

  sched-split.py PS_DATA TID [TID ...]

`perf sched timehist --state` gives one row per switch-out of a thread: the off-CPU time that
ended at the switch-in before it ("wait time", the runnable part of it "sch delay"), the run
time, and the kernel stack of this switch-out. `perf script --tid` lists the same switch-outs
in the same order with the whole stack, user frames included. Each off-CPU interval is put
under the switch-out that began it (row k's stack, row k+1's wait time):
  io      the stack is in a direct read (iomap_dio_rw / io_schedule)
  futex:  the user frame under the futex call: `syscall` is pheap's own raw futex
          (pager_impl::sleep_for_page, the only FUTEX_WAIT in the library), the glibc
          condition-variable wait is __futex_abstimed_wait_common, a contended pthread
          mutex __GI___lll_lock_wait
  other   anything else (preempted, the return from a page fault)
"""
import collections
import re
import subprocess
import sys

ROW = re.compile(r'\s*([\d.]+)\s+\[(\d+)\]\s+\S.*?\[(\d+)(?:/\d+)?\]\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)')


def perf(*args):
    return subprocess.run(['perf', *args], check=True, capture_output=True, text=True).stdout


def main():
    data, tids = sys.argv[1], sys.argv[2:]
    rows = collections.defaultdict(list)  # tid -> [(time, wait ms, sch delay ms, run ms)]
    for line in perf('sched', 'timehist', '-i', data, '--state').splitlines():
        m = ROW.match(line)
        if m and m.group(3) in tids:
            rows[m.group(3)].append(tuple(float(m.group(i)) for i in (1, 4, 5, 6)))
    for tid in tids:
        cats = []
        for block in perf('script', '-i', data, '--tid', tid, '-F', 'tid,event,ip,sym,dso').split('\n\n'):
            lines = block.strip().splitlines()
            if not lines or 'sched_switch' not in lines[0]:
                continue
            if 'futex' in block:
                user = [l.split()[1] for l in lines[1:] if len(l.split()) >= 3 and 'kernel' not in l.split()[-1]]
                cats.append('futex:' + (user[0] if user else '?'))
            elif 'iomap_dio' in block or 'io_schedule' in block:
                cats.append('io')
            else:
                cats.append('other')
        r = rows[tid]
        if len(cats) != len(r):
            sys.exit(f'thread {tid}: {len(cats)} switch-outs in perf script, {len(r)} in timehist')
        split = collections.Counter()
        for k in range(len(r) - 1):
            split[cats[k]] += r[k + 1][1]
        print(f'thread {tid}: span {r[-1][0] - r[0][0]:.2f} s, on CPU {sum(x[3] for x in r) / 1e3:.2f} s, '
              f'off CPU {sum(x[1] for x in r) / 1e3:.2f} s (runnable {sum(x[2] for x in r) / 1e3:.2f} s)')
        for cat, ms in split.most_common():
            print(f'  {cat:40s} {ms / 1e3:6.2f} s')


if __name__ == '__main__':
    main()
