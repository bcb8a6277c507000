#!/usr/bin/env python3
"""Splits the CPU samples of a `perf record -g` profile (bench/README.md run AC) by thread and,
per thread, by the system call (or kernel path) each sample is in, and, for the evictor's
UFFDIO_MOVE and madvise samples, how many are TLB shootdowns (flush_tlb_mm_range).
Usage: perf script -i perf.data | cpu-split.py"""
import collections
import re
import sys

MARKS = ['move_pages', 'do_pagemap_scan', 'mfill_atomic_copy', '__x64_sys_pread64',
         '__x64_sys_pwrite64', '__x64_sys_madvise', '__x64_sys_process_madvise',
         '__x64_sys_io_uring_enter', '__x64_sys_futex', '__x64_sys_rt_sigreturn', 'asm_exc_page_fault',
         '__x64_sys_ioctl', 'asm_common_interrupt']

def samples(text):
    for block in text.split('\n\n'):
        lines = [l.strip() for l in block.strip().split('\n') if l.strip()]
        if len(lines) < 2:
            continue
        comm = lines[0].split()[0]
        syms = []
        for l in lines[1:]:
            parts = l.split(None, 2)
            syms.append(re.sub(r'\+0x[0-9a-f]+$', '', parts[1]) if len(parts) > 1 else l)
        yield comm, syms

per = collections.defaultdict(collections.Counter)
shoot = collections.Counter()
total = collections.Counter()
for comm, syms in samples(sys.stdin.read()):
    key = next((m for m in MARKS if m in syms), 'user space or other')
    per[comm][key] += 1
    total[comm] += 1
    if key in ('move_pages', '__x64_sys_madvise') and 'flush_tlb_mm_range' in syms:
        shoot[(comm, key)] += 1
all_samples = sum(total.values())
for comm, n in total.most_common():
    print(f'{comm}: {n} samples, {100 * n / all_samples:.1f} % of all')
    for key, k in per[comm].most_common(8):
        extra = ''
        if (comm, key) in shoot:
            extra = f'  (TLB shootdowns inside it: {100 * shoot[(comm, key)] / n:.1f} % of the thread)'
        print(f'    {100 * k / n:5.1f} %  {key}{extra}')
