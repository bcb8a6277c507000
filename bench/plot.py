#!/usr/bin/env python3
"""bench/plot.py RESULTS_DIR | CSV — ratio tables (stdout) and PNG plots (gnuplot) from benchmark CSVs.

RESULTS_DIR: reads construct.csv, persist.csv, fault.csv there (bench/run.sh, bench/ooc_matrix.sh).
CSV: one file with construct_bench's columns (e.g. results/2026-11-25-budget/pagesize.csv); its
outputs go beside it, named after it (pagesize_arcs_vs_budget.png, ...).
Writes *.dat, *.gp and *.png; standard library only; plots need `gnuplot` (Debian: gnuplot-nox).
"""
import collections
import csv
import math
import os
import shutil
import subprocess
import sys

if len(sys.argv) > 2 or (len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help")):
    print(__doc__.strip())
    sys.exit(0 if len(sys.argv) == 2 else 2)
arg = sys.argv[1] if len(sys.argv) > 1 else "."
if not os.path.exists(arg):
    sys.exit(f"{arg}: no such results directory or CSV")
if os.path.isfile(arg):  # one construct CSV: its plots are prefixed with its name
    out, construct_csv = os.path.dirname(arg) or ".", os.path.basename(arg)
    prefix = "" if construct_csv == "construct.csv" else os.path.splitext(construct_csv)[0] + "_"
else:
    out, construct_csv, prefix = arg, "construct.csv", ""
whole_dir = construct_csv == "construct.csv"  # also persist.csv and fault.csv
MODE_ORDER = {"incore": 0, "half": 1, "quarter": 2, "eighth": 3}
MODE_NAMES = {"incore": "in core", "half": "1/2", "quarter": "1/4", "eighth": "1/8"}
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


def status(r):
    """ok, dnf (timeout), oom (killed by its cgroup's OOM killer), crash (other signal) or error.
    Rows written before construct_bench told these apart said error with the note "child killed
    by signal 9 (OOM in the memory cgroup?)" (and 0 arcs): read as oom, other signals as crash."""
    st, note = r["status"], r.get("note") or ""
    if st == "error" and "killed by signal 9 (OOM" in note:
        return "oom"
    if st == "error" and "child killed by signal" in note:
        return "crash"
    return st


rows = read(construct_csv)
# key: (label, mode, scale, threads, system, page) -> row (last one wins)
R = {}
for r in rows:
    R[(r["label"], r["mode"], int(r["scale"]), int(r["threads"]), r["system"], int(r["page_size"]))] = r


def fmt_rate(r):
    if r is None:
        return "-"
    st = status(r)
    if st == "ok":
        return f"{rate(r) / 1e6:.2f}M"
    if st == "dnf":
        return f"DNF(<{rate(r) / 1e6:.3f}M)"
    return st.upper()


def times(v):
    """2 decimals, or 2 significant digits below 0.1 (0.0028x, not 0.00x)."""
    return f"{v:.2f}x" if v >= 0.1 else f"{v:.2g}x"


def ratio(a, b):
    """a/b of arcs/s. A DNF's rate is an upper bound, so against a finished run the ratio is a
    bound (> or <); two DNFs compare by progress (arcs done, same timeout). None if a side is
    missing."""
    if a is None or b is None:
        return None
    ra, rb = rate(a), rate(b)
    sa, sb = status(a), status(b)
    if sa == "ok" and sb == "ok" and rb > 0:
        return times(ra / rb)
    if sa == "ok" and sb == "dnf":
        return f">{ra / rb:.1f}x" if rb > 0 else ">inf (other made no progress)"
    if sa == "dnf" and sb == "ok" and rb > 0:
        return "<" + times(ra / rb)
    if sa == "dnf" and sb == "dnf":
        arcs_b = int(b["arcs"])
        return f"both DNF, progress {times(int(a['arcs']) / arcs_b)}" if arcs_b > 0 else "both DNF"
    return f"({sa} vs {sb})"


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
for (label, mode, scale, thr) in sorted({(k[0], k[1], k[2], k[3]) for k in R if k[1] != "incore"},
                                        key=lambda k: (k[2], k[3], MODE_ORDER.get(k[1], 9))):
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
            if r is not None and status(r) not in ("ok", "dnf"):
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

# Every system against mmap-random and mmap at the same budget, SCALE and thread count. Rows
# are keyed without their label; where several rounds share a key, the median round by arcs/s
# stands for them (of an even count, the slower of the two middle ones: no round is picked for
# looking good). Systems are whatever the CSV names, in the order they first appear.
rounds = collections.defaultdict(list)  # (scale, threads, mode, system, page) -> rows
for r in rows:
    rounds[(int(r["scale"]), int(r["threads"]), r["mode"], r["system"], int(r["page_size"]))].append(r)
B = {k: sorted(rs, key=rate)[(len(rs) - 1) // 2] for k, rs in rounds.items()}
systems_seen = list(dict.fromkeys(r["system"] for r in rows))
full_arcs = {}  # scale -> arcs of a finished run (the whole graph)
for r in rows:
    if status(r) == "ok":
        full_arcs[int(r["scale"])] = max(full_arcs.get(int(r["scale"]), 0), int(r["arcs"]))


def outcome(r):
    """'ok 76.2 s', or the progress of a run that did not finish: 'DNF 6.80 M arcs (81 %)'."""
    st = status(r)
    if st == "ok":
        return f"ok {float(r['ingest_s']):.1f} s"
    if int(r["arcs"]) == 0:
        return f"{st.upper()}, no progress recorded"
    full = full_arcs.get(int(r["scale"]))
    return f"{st.upper()} {int(r['arcs']) / 1e6:.2f} M arcs" + (f" ({100 * int(r['arcs']) / full:.0f} %)" if full else "")


def budget_name(mode, budget_bytes):
    return MODE_NAMES.get(mode, mode) + (f" ({budget_bytes / 2**20:.1f} MiB)" if budget_bytes else "")


if any(k[2] != "incore" for k in B):
    print()
    print("== Each system against mmap-random and mmap at the same budget (arcs/s; DNF: arcs done / timeout, "
          "an upper bound; OOM, CRASH: arcs done / time until killed) ==")
    for scale, thr in sorted({k[:2] for k in B}):
        print(f"-- SCALE {scale}, {thr} thread(s)")
        print(f"   {'budget':<17} {'system':<22} {'page':>7}  {'outcome':<26} {'arcs/s':>9}  "
              f"{'vs mmap-random':<28} vs mmap")
        for mode in sorted({k[2] for k in B if k[:2] == (scale, thr)}, key=lambda m: MODE_ORDER.get(m, 9)):
            refs = {ref: B.get((scale, thr, mode, ref, 4096)) for ref in ("mmap-random", "mmap")}
            for sys_ in systems_seen:
                for page in sorted({k[4] for k in B if k[:4] == (scale, thr, mode, sys_)}):
                    r = B[(scale, thr, mode, sys_, page)]
                    vs = [("-" if ref == sys_ else ratio(r, refs[ref]) or "-") for ref in ("mmap-random", "mmap")]
                    print(f"   {budget_name(mode, int(r['budget_bytes'])):<17} {sys_:<22} {kib(page):>7}  "
                          f"{outcome(r):<26} {rate(r):>9.0f}  {vs[0]:<28} {vs[1]}")

print()
print("== Best page size per workload (uffd, arcs/s) ==")
for (label, mode, scale, thr) in sorted({(k[0], k[1], k[2], k[3]) for k in R}, key=lambda k: (k[1], k[2], k[3])):
    cands = [r for k, r in R.items() if k[:4] == (label, mode, scale, thr) and k[4] == "uffd" and r["status"] == "ok"]
    if len(cands) > 1:
        best = max(cands, key=rate)
        print(f"  {label:>9} {mode:>7} SCALE {scale} {thr}t: {kib(best['page_size'])}  "
              + "  ".join(f"{kib(r['page_size'])}={rate(r) / 1e6:.2f}M" for r in sorted(cands, key=lambda r: int(r['page_size']))))

persist = read("persist.csv") if whole_dir else []
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
                                        key=lambda k: (MODE_ORDER.get(k[1], 9), k[2])):
    if thr != 2:
        continue
    pages = sorted({k[5] for k in R if k[:4] == (label, mode, scale, thr) and k[4].startswith("uffd")})
    if len(pages) < 2:  # a page-size plot needs page sizes
        continue
    fn = f"{prefix}pagesize_{mode}_s{scale}.dat"
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
         f"set output '{prefix}edges_vs_pagesize.png'",
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
    gnuplot(prefix + "edges_vs_pagesize", "\n".join(s) + "\n")

# 2. speedup of uffd over the mmap backend vs page size, per workload.
series = []
for (label, mode, scale, thr) in sorted({(k[0], k[1], k[2], k[3]) for k in R if k[0] == "pagesweep" or k[0].startswith("ooc")},
                                        key=lambda k: (MODE_ORDER.get(k[1], 9), k[2], k[3])):
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
    fn = f"{prefix}speedup_{mode}_s{scale}_t{thr}.dat"
    dat(fn, lines)
    series.append((fn, f"{mode} S{scale} {thr}t" + (" (mmap DNF: lower bound)" if m["status"] == "dnf" else "")))
if series:
    s = ["set terminal pngcairo size 900,560 font 'sans,10'", f"set output '{prefix}speedup_over_mmap.png'",
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
    gnuplot(prefix + "speedup_over_mmap", "\n".join(s) + "\n")

# 3. arcs/s vs memory budget (issue 16): x = in core, 1/2, 1/4, 1/8 of the final datastore; one
#    line per system (and SCALE, threads, page size where the CSV holds several), then one per
#    page size of each system that ran at several. Only (SCALE, threads) with an out-of-core row.
#    The marker tells how the run ended; a run that died with no progress recorded (rows written
#    before construct_bench kept it) sits on the bottom edge.
PALETTE = ["#1f77b4", "#2ca02c", "#d62728", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"]
COLOR = {"uffd": PALETTE[0], "mmap-random": PALETTE[1], "mmap": PALETTE[2]}  # the same in every run's plot
COLOR.update({s_: PALETTE[3 + i % 7] for i, s_ in enumerate(s_ for s_ in systems_seen if s_ not in COLOR)})
CGROUP_RULE = "each out-of-core run in its own memory cgroup: budget + slack, the process included"
MARKER = {"ok": 7, "dnf": 10, "oom": 2, "crash": 12}  # filled circle, open down-triangle, cross, open diamond
MARKER_KEY = {"ok": "finished: arcs / ingest time",
              "dnf": "did not finish: arcs done / timeout (an upper bound)",
              "oom": "OOM-killed in its cgroup: arcs done / time to the kill",
              "crash": "crashed or failed: arcs done / time"}


def cgroup_mib(r):
    """The cgroup limit from the note ('cgroup peak X MiB of Y MiB'), or None."""
    note = r.get("note") or ""
    i = note.find(" MiB of ")
    return int(note[i + 8:].split()[0]) if i >= 0 and note[i + 8:].split()[0].isdigit() else None


def xtics(rs):
    """In core, 1/2, 1/4, 1/8; with the budget and the cgroup limit when the rows agree on them."""
    tics = []
    for mode, x in MODE_ORDER.items():
        at = [r for r in rs if r["mode"] == mode]
        text = MODE_NAMES[mode] + ("" if at else "\\n(not run)")
        budgets = {int(r["budget_bytes"]) for r in at}
        limits = {cgroup_mib(r) for r in at} - {None}
        if len(budgets) == 1 and mode != "incore":
            mib = budgets.pop() / 2**20
            text += f"\\nbudget {mib:.{0 if mib >= 10 else 1}f} MiB"
            if len(limits) == 1:
                text += f"\\ncgroup {limits.pop()} MiB"
        tics.append(f'"{text}" {x}')
    return "set xtics (" + ", ".join(tics) + ")"


def budget_plot(name, title, panels):
    """panels: [(panel title, [(legend, color, dash type, rows)])] -> name.png, one panel per entry."""
    all_rows = [r for _, series in panels for *_, rs in series for r in rs]
    ys = [rate(r) for r in all_rows if rate(r) > 0]
    lo = 10 ** math.floor(math.log10(min(ys))) if ys else 1e3
    hi = max(10 ** math.ceil(math.log10(max(ys))) if ys else 1e7, lo * 100)
    ended = {status(r) if status(r) in MARKER else "crash" for r in all_rows}
    floor = {status(r) if status(r) in MARKER else "crash" for r in all_rows if rate(r) <= 0 and status(r) != "ok"}
    cols = min(2, len(panels))
    s = [f"set terminal pngcairo size {820 * cols},{760 * math.ceil(len(panels) / cols)} font 'sans,10'",
         f"set output '{name}.png'",
         f"set multiplot layout {math.ceil(len(panels) / cols)},{cols} title \"{title}\" font 'sans,11'",
         "set logscale y 10", "set format y '10^{%T}'", f"set yrange [{lo:g}:{hi:g}]", "set xrange [-0.3:3.3]",
         "set ylabel 'arcs/s (log scale)'", "set xlabel 'memory budget: fraction of the final datastore' offset 0,-2",
         "set grid ytics mytics", "set key outside below left Left reverse maxcols 2 font ',9' samplen 3 spacing 1.1"]
    for i, (ptitle, series) in enumerate(panels):
        fn = f"{name}_{i}.dat"
        blocks, plot_ = [], []
        for legend, color, dash, rs in series:
            pts = sorted(((MODE_ORDER[r["mode"]], rate(r), MARKER.get(status(r), 12)) for r in rs if rate(r) > 0))
            none = sorted((MODE_ORDER[r["mode"]], lo, MARKER.get(status(r), 12)) for r in rs if rate(r) <= 0 and status(r) != "ok")
            style = f"lc rgb '{color}' dt {dash}"
            if pts:
                blocks.append(pts)
                plot_.append(f"'{fn}' index {len(blocks) - 1} u 1:2 w l lw 2 {style} t '{legend}'")
                plot_.append(f"'{fn}' index {len(blocks) - 1} u 1:2:3 w p pt variable ps 1.8 lw 2 {style} notitle")
            if none:
                blocks.append(none)
                plot_.append(f"'{fn}' index {len(blocks) - 1} u 1:2:3 w p pt variable ps 1.8 lw 2 {style} notitle")
                if not pts:
                    plot_.append(f"keyentry w l lw 2 {style} t '{legend}'")
        dat(fn, ["\n\n\n".join("\n".join(f"{x} {y:.0f} {pt}" for x, y, pt in b) for b in blocks)])
        for st in MARKER:  # the marker legend, for the endings present
            if st in ended:
                text = MARKER_KEY[st] + ("; bottom edge: none recorded" if st in floor else "")
                plot_.append(f"keyentry w p pt {MARKER[st]} ps 1.5 lw 2 lc rgb 'black' t '{text}'")
        s += [xtics([r for *_, rs in series for r in rs]), f"set title '{ptitle}'", "plot " + ", ".join(plot_)]
    s.append("unset multiplot")
    gnuplot(name, "\n".join(s) + "\n")


def timeouts(rs):
    """[T] when every DNF row of rs says 'did not finish in T s' with the same T, else []."""
    ts = {(r.get("note") or "").split("did not finish in ")[1].split(" ")[0] for r in rs
          if status(r) == "dnf" and "did not finish in " in (r.get("note") or "")}
    return list(ts) if len(ts) == 1 else []


def budget_rows(scale, thr, system, page):
    return [r for k, r in B.items() if k[:2] == (scale, thr) and k[3] == system and k[4] == page and k[2] in MODE_ORDER]


ooc_at = {k[:2] for k in B if k[2] != "incore"}  # (scale, threads) with an out-of-core row
brows = [r for k, r in B.items() if k[:2] in ooc_at and k[2] in MODE_ORDER]
if brows:
    labels = ", ".join(dict.fromkeys(r["label"] for r in brows))
    shared = {f: {r[f] for r in brows} for f in ("scale", "threads", "page_size")}
    multi = {f: len(v) > 1 for f, v in shared.items()}
    pages_of = {s_: sorted({int(r["page_size"]) for r in brows if r["system"] == s_}) for s_ in systems_seen}
    pages_of = {s_: p for s_, p in pages_of.items() if p}
    series, dashes = [], {}
    for s_ in pages_of:
        for scale, thr in sorted(ooc_at):
            for rank, page in enumerate(pages_of[s_]):
                rs = budget_rows(scale, thr, s_, page)
                if not rs:
                    continue
                legend = s_ + (f" SCALE {scale}" if multi["scale"] else "") + (f" {thr}t" if multi["threads"] else "") \
                    + (f" {kib(page)}" if len(pages_of[s_]) > 1 else "")
                dash = dashes.setdefault((scale, thr, rank), len(dashes) + 1)
                series.append((legend.replace("_", "\\_"), COLOR[s_], dash, rs))
    head = "Graph construction, arcs/s vs memory budget (" + labels.replace("_", "\\_") + ")\\n" \
        + ("SCALE per line" if multi["scale"] else f"SCALE {min(shared['scale'])}") + ", " \
        + ("threads per line" if multi["threads"] else f"{min(shared['threads'])} threads") + ", " \
        + ("pheap page size per line, kernel mmap 4 KiB" if multi["page_size"] else f"{kib(min(shared['page_size']))} pages") \
        + "".join(f", timeout {t} s" for t in timeouts(brows)) + "\\n" + CGROUP_RULE
    budget_plot(prefix + "arcs_vs_budget", head, [("", series)])

    # 3b. per page size: systems that ran at several page sizes (uffd), one panel per SCALE/threads.
    paged = [s_ for s_, p in pages_of.items() if len(p) > 1]
    panels = []
    for scale, thr in sorted(ooc_at):
        series = []
        for j, s_ in enumerate(paged):
            for i, page in enumerate(pages_of[s_]):
                rs = budget_rows(scale, thr, s_, page)
                if rs:
                    series.append((f"{s_} {kib(page)}", PALETTE[i % len(PALETTE)], j + 1, rs))
        if series:
            panels.append((f"SCALE {scale}, {thr} threads: one line per page size", series))
    if panels:
        budget_plot(prefix + "arcs_vs_budget_pagesize",
                    "Graph construction, arcs/s vs memory budget per pheap page size (" + labels.replace("_", "\\_")
                    + ")" + "".join(f", timeout {t} s" for t in timeouts(brows)) + "\\n" + CGROUP_RULE, panels)
    else:
        print("\n(arcs/s vs budget per page size: every system ran at one page size only, no plot)")

# 4. fault cost vs page size (bench/pager/fault_bench), in core and out of core.
fault = read("fault.csv") if whole_dir else []
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

# 5. durability: flush vs dirty bytes; reopen/snapshot vs size.
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
