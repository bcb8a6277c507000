#!/usr/bin/env python3
"""bench/plot.py RESULTS_DIR — ratio tables (stdout) and PNG plots (gnuplot) from bench/run.sh CSVs.

Reads construct.csv, persist.csv, fault.csv in RESULTS_DIR; writes *.dat, *.gp and *.png there.
Standard library only; plots need the `gnuplot` command (Debian: gnuplot-nox).
"""
import collections
import csv
import math
import os
import shutil
import subprocess
import sys

out = sys.argv[1] if len(sys.argv) > 1 else "."
SYSTEMS = ["uffd", "uffd-1file", "mmap", "bip", "dram"]
TITLES = {"uffd": "pheap uffd+SparseStore", "uffd-1file": "pheap uffd, one file", "mmap": "pheap mmap backend",
          "bip": "Boost.Interprocess mmf", "dram": "std::allocator (DRAM)"}


def read(name):
    p = os.path.join(out, name)
    if not os.path.exists(p):
        return []
    with open(p) as f:
        return list(csv.DictReader(f))


def kib(ps):
    ps = int(ps)
    return f"{ps // 1048576} MiB" if ps >= 1048576 else f"{ps // 1024} KiB"


def rate(r):
    return float(r["arcs_per_s"] or 0)


rows = read("construct.csv")
# key: (label, mode, scale, threads, system, page) -> row (last one wins)
R = {}
for r in rows:
    R[(r["label"], r["mode"], int(r["scale"]), int(r["threads"]), r["system"], int(r["page_size"]))] = r


def fmt_rate(r):
    if r is None:
        return "-"
    if r["status"] == "ok":
        return f"{rate(r) / 1e6:.2f}M"
    if r["status"] == "dnf":
        return f"DNF(<{rate(r) / 1e6:.3f}M)"
    return "ERR"


def ratio(a, b):
    """a/b with a bound marker when one side did not finish; None if meaningless."""
    if a is None or b is None:
        return None
    ra, rb = rate(a), rate(b)
    if a["status"] == "ok" and b["status"] == "ok" and rb > 0:
        return f"{ra / rb:.2f}x"
    if a["status"] == "ok" and b["status"] == "dnf":
        return f">{ra / rb:.1f}x" if rb > 0 else ">inf (other made no progress)"
    if a["status"] == "dnf" and b["status"] == "ok" and rb > 0:
        return f"<{ra / rb:.2f}x"
    if a["status"] == "dnf" and b["status"] == "dnf":
        return "both DNF"
    return f"({a['status']} vs {b['status']})"


print("== In-core construction (label incore, 64 KiB pages): arcs/s and ratios ==")
print(f"{'scale':>5} {'thr':>3} | {'dram':>9} {'bip':>9} {'mmap':>9} {'uffd':>9} {'uffd-1f':>9} | "
      f"{'uffd/dram':>9} {'uffd/bip':>9} {'uffd/mmap':>9} {'mmap/dram':>9} {'uffd/1file':>10}")
for (label, mode, scale, thr) in sorted({(k[0], k[1], k[2], k[3]) for k in R if k[0] == "incore"}, key=lambda k: (k[2], k[3])):
    g = lambda s, p=65536: R.get((label, mode, scale, thr, s, 4096 if s in ("dram", "bip", "mmap") else p))
    d, b, m, u, u1 = g("dram"), g("bip"), g("mmap"), g("uffd"), g("uffd-1file")
    print(f"{scale:>5} {thr:>3} | {fmt_rate(d):>9} {fmt_rate(b):>9} {fmt_rate(m):>9} {fmt_rate(u):>9} {fmt_rate(u1):>9} | "
          f"{ratio(u, d) or '-':>9} {ratio(u, b) or '-':>9} {ratio(u, m) or '-':>9} {ratio(m, d) or '-':>9} {ratio(u, u1) or '-':>10}")

print()
print("== Out-of-core construction (label ooc): arcs/s per page size, and uffd vs mmap backend / BIP / one file ==")
for (label, mode, scale, thr) in sorted({(k[0], k[1], k[2], k[3]) for k in R if k[1] != "incore"}, key=lambda k: (k[2], k[3], k[1])):
    m = R.get((label, mode, scale, thr, "mmap", 4096))
    mr = R.get((label, mode, scale, thr, "mmap-random", 4096))
    b = R.get((label, mode, scale, thr, "bip", 4096))
    budget = next((int(r["budget_bytes"]) for k, r in R.items() if k[:4] == (label, mode, scale, thr)), 0)
    print(f"-- SCALE {scale}, {thr} thread(s), {mode} (budget {budget / 2**20:.1f} MiB + slack): "
          f"mmap {fmt_rate(m)}  mmap+MADV_RANDOM {fmt_rate(mr)}  bip {fmt_rate(b)}")
    pages = sorted({k[5] for k in R if k[:4] == (label, mode, scale, thr) and k[4].startswith("uffd")})
    for p in pages:
        u, u1 = R.get((label, mode, scale, thr, "uffd", p)), R.get((label, mode, scale, thr, "uffd-1file", p))
        note = ""
        for s, r in (("uffd", u), ("1file", u1)):
            if r is not None and r["status"] == "error":
                note += f" [{s}: {r['note'][:70]}]"
        print(f"   {kib(p):>7}: uffd {fmt_rate(u):>14} 1file {fmt_rate(u1):>14} | uffd/mmap {ratio(u, m) or '-':>9} "
              f"uffd/mmap-random {ratio(u, mr) or '-':>9} uffd/bip {ratio(u, b) or '-':>9} sparse/1file {ratio(u, u1) or '-':>9}{note}")
    if u := [R.get((label, mode, scale, thr, "uffd", p)) for p in pages]:
        ok = [r for r in u if r is not None and r["status"] == "ok"]
        if ok:
            best = max(ok, key=rate)
            print(f"   best uffd page size: {kib(best['page_size'])} ({rate(best) / 1e6:.3f} M arcs/s; faults "
                  f"{best['pager_faults']}, MiB read {int(best['pager_bytes_read']) >> 20}, MiB written "
                  f"{int(best['pager_bytes_written']) >> 20})")

print()
print("== Best page size per workload (uffd, arcs/s) ==")
for (label, mode, scale, thr) in sorted({(k[0], k[1], k[2], k[3]) for k in R}, key=lambda k: (k[1], k[2], k[3])):
    cands = [r for k, r in R.items() if k[:4] == (label, mode, scale, thr) and k[4] == "uffd" and r["status"] == "ok"]
    if len(cands) > 1:
        best = max(cands, key=rate)
        print(f"  {label:>9} {mode:>7} SCALE {scale} {thr}t: {kib(best['page_size'])}  "
              + "  ".join(f"{kib(r['page_size'])}={rate(r) / 1e6:.2f}M" for r in sorted(cands, key=lambda r: int(r['page_size']))))

persist = read("persist.csv")
if persist:
    print()
    print("== Durability costs (persist_bench): seconds ==")
    for r in persist:
        print(f"  {r['bench']:>10} {r['backend']:>5} page {kib(r['page_size']):>7} {int(r['bytes']) / 2**20:8.0f} MiB  "
              f"{float(r['seconds']) * 1e3:9.2f} ms")

# ---------------------------------------------------------------- plots
gp = shutil.which("gnuplot")
if gp is None:
    print("\n(no gnuplot: install gnuplot-nox for the PNG plots)")
    sys.exit(0)

plots = []


def dat(name, lines):
    with open(os.path.join(out, name), "w") as f:
        f.write("\n".join(lines) + "\n")


def gnuplot(name, script):
    p = os.path.join(out, name + ".gp")
    with open(p, "w") as f:
        f.write(script)
    subprocess.run([gp, os.path.abspath(p)], cwd=out, check=False)
    plots.append(name + ".png")


# 1. arcs/s vs page size per system, one panel per (mode, scale) found. Runs that did not
#    finish are drawn as open down-triangles at arcs-done/timeout (an upper bound); failed runs
#    (OOM, disk guard) are left out and listed in the summary.
panels = []
for (label, mode, scale, thr) in sorted({(k[0], k[1], k[2], k[3]) for k in R if k[0] == "pagesweep" or k[0].startswith("ooc")},
                                        key=lambda k: ({"incore": 0, "quarter": 1, "eighth": 2}[k[1]], k[2])):
    if thr != 2:
        continue
    pages = sorted({k[5] for k in R if k[:4] == (label, mode, scale, thr) and k[4].startswith("uffd")})
    if not pages:
        continue
    fn = f"pagesize_{mode}_s{scale}.dat"
    lines = ["# page_kib then per system (uffd uffd-1file mmap bip mmap-random): ok_rate dnf_upper_bound (NaN = none)"]
    for p in pages:
        vals = []
        for s_ in ("uffd", "uffd-1file", "mmap", "bip", "mmap-random"):
            r = R.get((label, mode, scale, thr, s_, p if s_.startswith("uffd") else 4096))
            ok = r is not None and r["status"] == "ok" and rate(r) > 0
            dnf = r is not None and r["status"] == "dnf" and rate(r) > 0
            vals += [f"{rate(r):.0f}" if ok else "NaN", f"{rate(r):.0f}" if dnf else "NaN"]
        lines.append(f"{p // 1024} " + " ".join(vals))
    dat(fn, lines)
    panels.append((fn, f"{mode}, SCALE {scale}, 2 threads"))
if panels:
    cols = min(3, len(panels))
    rows_ = math.ceil(len(panels) / cols)
    s = [f"set terminal pngcairo size {500 * cols},{420 * rows_} font 'sans,9'",
         "set output 'edges_vs_pagesize.png'",
         f"set multiplot layout {rows_},{cols} title \"Graph construction: arcs/s vs pheap page size (kernel-mmap systems use 4 KiB pages: flat lines)\\n"
         "triangles / dotted: did not finish (arcs done / timeout, an upper bound); missing uffd points: OOM-killed or disk guard (summary.txt)\"",
         "set logscale x 2", "set logscale y 10", "set xlabel 'pheap page size (KiB)'", "set ylabel 'arcs/s'",
         "set key top right font ',8' samplen 3", "set grid", "set xrange [2:2048]", "set format y '10^{%T}'", "set yrange [1e3:1e9]"]
    for fn, title in panels:
        s.append(f"set title '{title}'")
        s.append(f"plot '{fn}' u 1:2 w lp lw 2 pt 7 lc 1 t 'uffd+SparseStore', '' u 1:3 w p pt 11 ps 1.5 lc 1 notitle, "
                 f"'' u 1:4 w lp lw 2 pt 5 lc 2 t 'uffd one file', '' u 1:5 w p pt 11 ps 1.5 lc 2 notitle, "
                 f"'' u 1:6 w l lw 2 dt 2 lc 3 t 'mmap backend', '' u 1:7 w l lw 2 dt 3 lc 3 t 'mmap backend DNF (<=)', "
                 f"'' u 1:8 w l lw 2 dt 2 lc 4 t 'Boost.IP mmf', '' u 1:9 w l lw 2 dt 3 lc 4 t 'Boost.IP DNF (<=)', "
                 f"'' u 1:10 w l lw 2 dt 4 lc 6 t 'mmap backend + MADV\\_RANDOM', '' u 1:11 w l lw 2 dt 3 lc 6 t 'mmap+MADV\\_RANDOM DNF (<=)'")
    s.append("unset multiplot")
    gnuplot("edges_vs_pagesize", "\n".join(s) + "\n")

# 2. speedup of uffd over the mmap backend vs page size, per workload.
series = []
for (label, mode, scale, thr) in sorted({(k[0], k[1], k[2], k[3]) for k in R if k[0] == "pagesweep" or k[0].startswith("ooc")},
                                        key=lambda k: ({"incore": 0, "quarter": 1, "eighth": 2}[k[1]], k[2], k[3])):
    m = R.get((label, mode, scale, thr, "mmap", 4096))
    if m is None or rate(m) <= 0:
        continue
    if not any(r["status"] == "ok" for k, r in R.items() if k[:4] == (label, mode, scale, thr) and k[4].startswith("uffd")):
        continue
    pages = sorted({k[5] for k in R if k[:4] == (label, mode, scale, thr) and k[4] == "uffd"})
    lines = ["# page_kib speedup_uffd speedup_1file (uffd arcs/s / mmap arcs/s; mmap DNF -> lower bound)"]
    for p in pages:
        vals = []
        for s in ("uffd", "uffd-1file"):
            r = R.get((label, mode, scale, thr, s, p))
            # Only finished uffd runs: a ratio of two did-not-finish bounds means nothing.
            vals.append(f"{rate(r) / rate(m):.4f}" if r is not None and r["status"] == "ok" and rate(r) > 0 else "NaN")
        lines.append(f"{p // 1024} " + " ".join(vals))
    fn = f"speedup_{mode}_s{scale}_t{thr}.dat"
    dat(fn, lines)
    series.append((fn, f"{mode} S{scale} {thr}t" + (" (mmap DNF: lower bound)" if m["status"] == "dnf" else "")))
if series:
    s = ["set terminal pngcairo size 900,560 font 'sans,10'", "set output 'speedup_over_mmap.png'",
         'set title "Speedup of pheap uffd over the pheap mmap backend\\n(same heap code, same memory; finished uffd runs only)"',
         "set logscale x 2", "set logscale y 10", "set xlabel 'pheap page size (KiB)'",
         "set ylabel 'uffd arcs/s / mmap arcs/s'", "set grid", "set key outside right", "set xrange [2:2048]",
         "set arrow from 2,1 to 2048,1 nohead dt 2 lc rgb 'black'",
         "set arrow from 2,5 to 2048,5 nohead dt 3 lc rgb 'red'",
         "set label 'target 5x (out of core)' at 2.2,6 tc rgb 'red'"]
    plots_ = []
    for i, (fn, t) in enumerate(series):
        plots_.append(f"'{fn}' u 1:2 w lp lw 2 pt {5 + i} t '{t} sparse'")
        plots_.append(f"'{fn}' u 1:3 w lp lw 1 dt 2 pt {5 + i} t '{t} 1file'")
    s.append("plot " + ", ".join(plots_))
    gnuplot("speedup_over_mmap", "\n".join(s) + "\n")

# 3. fault cost vs page size (bench/pager/fault_bench), in core and out of core.
fault = read("fault.csv")
if fault:
    by = collections.defaultdict(dict)
    for r in fault:
        try:
            v = float(r["ns_per_4KiB"])
        except (ValueError, KeyError):
            continue
        if r["system"] == "first_write":
            continue  # a different metric (cost per first write), see fault.csv
        by[(r["system"], r["config"], r["pattern"])][int(r["page_size"])] = v
    s = ["set terminal pngcairo size 1200,500 font 'sans,9'", "set output 'fault_cost_vs_pagesize.png'",
         "set multiplot layout 1,2 title 'Fault cost vs page size (bench/pager/fault\\_bench): ns per 4 KiB touched (lower is better)'",
         "set logscale x 2", "set logscale y 10", "set xlabel 'page size (KiB)'", "set ylabel 'ns per 4 KiB'",
         "set grid", "set key top left font 'sans,8'", "set xrange [2:4096]", "set format y '10^{%T}'"]
    colors = {"seq_read": 1, "rand_read": 2, "seq_write": 3, "rand_write": 4}
    for panel, cfgs in (("in core", ("in_core", "zero_fill", "uffd_copy_1thread")), ("out of core (buffer = data/8)", ("out_of_core",))):
        plots_ = []
        for key in sorted(by):
            system, cfg, pat = key
            if cfg not in cfgs:
                continue
            pts = sorted(by[key].items())
            fn = "fault_" + "_".join(key) + ".dat"
            dat(fn, [f"{p // 1024} {v}" for p, v in pts])
            if system == "pheap" and cfg in ("in_core", "out_of_core"):
                style = f"lp lw 2 pt 7 lc {colors.get(pat, 5)}"
            elif system == "mmap":
                style = f"p pt 9 ps 1.8 lc {colors.get(pat, 5)}"
            else:
                style = f"lp lw 2 dt 2 pt 6 lc {6 if system == 'floor' else 7}"
            title = f"{system} {pat}" + (" (zero fill)" if cfg == "zero_fill" else "") + (" (bare uffd floor)" if system == "floor" else "")
            plots_.append(f"'{fn}' u 1:2 w {style} t '{title.replace('_', ' ')}'")
        s.append(f"set title '{panel}: pheap (lines) vs kernel mmap (triangles, 4 KiB)'")
        s.append("plot " + ", ".join(plots_))
    s.append("unset multiplot")
    gnuplot("fault_cost_vs_pagesize", "\n".join(s) + "\n")

# 4. durability: flush vs dirty bytes; reopen/snapshot vs size.
if persist:
    s = ["set terminal pngcairo size 1200,420 font 'sans,9'", "set output 'persist.png'",
         "set multiplot layout 1,3", "set logscale x 2", "set logscale y 10", "set grid", "set key top left",
         "set xlabel 'MiB'", "set ylabel 'seconds'"]
    for bench, title in (("flush", "flush() vs dirty MiB (+ dashed: next empty flush)"), ("reopen_rw", "open\\_only vs datastore MiB"),
                         ("snapshot", "snapshot() vs datastore MiB")):
        plots_ = []
        for be in ("uffd", "mmap"):
            for p in sorted({int(r["page_size"]) for r in persist}):
                pts = [(int(r["bytes"]) / 2**20, float(r["seconds"])) for r in persist
                       if r["bench"] == bench and r["backend"] == be and int(r["page_size"]) == p and int(r["bytes"]) > 0]
                if not pts:
                    continue
                fn = f"persist_{bench}_{be}_{p}.dat"
                dat(fn, [f"{x} {y}" for x, y in sorted(pts)])
                plots_.append(f"'{fn}' u 1:2 w lp lw 2 t '{be} {kib(p)}'")
                if bench == "flush":
                    nxt = [(int(r["bytes"]) / 2**20, float(r["seconds"])) for r in persist
                           if r["bench"] == "flush_next_empty" and r["backend"] == be and int(r["page_size"]) == p]
                    if nxt:
                        fn2 = f"persist_flushnext_{be}_{p}.dat"
                        dat(fn2, [f"{x} {y}" for x, y in sorted(nxt)])
                        plots_.append(f"'{fn2}' u 1:2 w lp lw 1 dt 2 t '{be} {kib(p)} next'")
        if plots_:
            s.append(f"set title '{title}'")
            s.append("plot " + ", ".join(plots_))
    s.append("unset multiplot")
    gnuplot("persist", "\n".join(s) + "\n")

print("\nplots: " + ", ".join(plots))
