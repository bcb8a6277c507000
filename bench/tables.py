#!/usr/bin/env python3
"""Regenerate the tables of bench/README.md from the CSVs in bench/results/.

  python3 bench/tables.py          rewrite every table between its markers
  python3 bench/tables.py --check  exit 1 if bench/README.md is not what this script writes,
                                   or a relative link of README.md or DECISIONS.md does not resolve
  python3 bench/tables.py --list   print which folder and file feed each table

A table sits between `<!-- table: NAME -->` and `<!-- end table -->` in bench/README.md.
MANIFEST below says, for each NAME, which result folder and file feed it and which of its
columns are read; the function of the same name turns those rows into the table. Medians are
over the rounds a CSV holds; a ratio is of medians unless the table says per round.
Python 3 standard library only.
"""
import csv
import os
import re
import statistics
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(BENCH, "results")
README = os.path.join(BENCH, "README.md")

BFS_COLUMNS = "system wall_s faults device_reads device_mb avg_inflight"

# name -> the sources of the table: (folder under bench/results, file, columns read).
MANIFEST = {
    "incore-peers": [("2026-11-22-quick", "construct.csv",
                      "label system scale threads arcs_per_s")],
    "incore-pagesize": [("2026-11-29-incore-am", "incore-pagesize.csv",
                         "system page_size ingest_s")],
    "ooc-kernel": [
        ("2026-11-28-pagesize", "pagesize.csv", "system mode scale page_size status arcs_per_s"),
        ("2026-11-29-lazy-staging", "construct2.csv", "label system status arcs_per_s"),
        ("2026-11-27-eighth-after-fills", "construct.csv", "system status arcs_per_s"),
        ("2026-11-27-graph-defaults", "construct.csv", "system scale status arcs_per_s"),
        ("2026-11-29-s20-quarter-ak", "construct.csv", "system status arcs_per_s"),
        ("2026-11-29-s20-half-mmap", "construct.csv", "system status arcs arcs_per_s"),
    ],
    "ooc-ab": [("2026-12-01-ooc-ab", "construct-s18-half-quarter.csv",
                "label mode status ingest_s arcs_per_s pager_pages_read")],
    "tiny": [("2026-11-29-mechanism-floor", "floor.csv",
              "page buffer_pages pheap_s disk2_s floor2_s")],
    "cold-read": [("2026-12-07-cold-read", "summary.csv",
                   "scale command system state wall_s vs_mmap vs_cat")],
    "scan": [("2026-12-07-scan-pull", "scan.csv",
              "case mib_per_s faults pages_read store_read_requests")],
    "random-bfs-lists": [("2026-12-06-random-bfs", "bfs.csv", BFS_COLUMNS)],
    "flush": [("2026-12-05-flush", "construct.csv",
               "label system flush_s close_s pager_bytes_written")],
    "durability": [("2026-11-25-format3", "durability.csv",
                    "label bench page_size bytes seconds")],
    "tool-ingest": [("2026-11-26-tool-ingest", "tool-ingest.csv",
                     "column 1 (budget), 2 (form), 3 (seconds)")],
    "python": [("2026-12-03-python", "summary.csv", "case measure value target met")],
    "huge-construct": [("2026-12-07-huge-construct", "construct.csv",
                        "label status ingest_s flush_s pager_faults")],
    "huge-incore": [("2026-12-06-huge-incore", "walk.csv tool.csv random.csv",
                     "label algo walk_s walk_cpu_s wall_s pager_faults heap_bytes mode "
                     "dependent_ns_per_read independent_ns_per_read faults_per_gib")],
    "huge-auto": [("2026-12-07-huge-auto", "construct.csv incore/walk.csv incore/tool.csv",
                   "label mode status ingest_s algo walk_s wall_s huge_mapped_bytes huge_promotions")],
}


def rows_of(table, header=True):
    """The rows of every file MANIFEST names for `table` (one folder), concatenated."""
    (folder, files, _), = MANIFEST[table]
    out = []
    for f in files.split():
        out += read(folder, f, header)
    return out


def read(folder, name, header=True):
    with open(os.path.join(RESULTS, folder, name), newline="") as f:
        return list(csv.DictReader(f)) if header else list(csv.reader(f))


def med(xs):
    return statistics.median(xs)


def x(v, nd=2):
    return f"{v:.{nd}f}x"


def s(v, nd=2):
    return f"{v:.{nd}f} s"


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def rates(rows, **match):
    """arcs/s of the rows whose columns equal match, and whether any did not finish."""
    got = [r for r in rows if all(re.fullmatch(v, r[k]) for k, v in match.items())]
    return [float(r["arcs_per_s"]) for r in got], any(r["status"] != "ok" for r in got)


# Each function: the rows of its MANIFEST sources -> the markdown table.

def incore_peers():
    rows = [r for r in rows_of("incore-peers") if r["label"] == "incore"]
    rate = {(r["system"], r["scale"], r["threads"]): float(r["arcs_per_s"]) for r in rows}
    out = []
    for sc, th in sorted({(r["scale"], r["threads"]) for r in rows}):
        u, d, b, m = (rate[(k, sc, th)] for k in ("uffd", "dram", "bip", "mmap"))
        out.append([sc, th, x(u / d), x(u / b), x(u / m), x(m / d)])
    return table(["SCALE", "threads", "pheap / std::allocator", "pheap / Boost.IP",
                  "pheap / mmap backend", "mmap backend / std::allocator"], out)


def incore_pagesize():
    rows = rows_of("incore-pagesize")
    out = []
    for system in ("uffd", "uffd-grouped"):
        t = {p: med([float(r["ingest_s"]) for r in rows
                     if r["system"] == system and r["page_size"] == p]) for p in ("4096", "65536")}
        out.append([system, s(t["4096"], 3), s(t["65536"], 3), x(t["4096"] / t["65536"]),
                    "≤ 1.1x", "met" if t["4096"] / t["65536"] <= 1.1 else "**missed**"])
    return table(["form", "4 KiB, median of 5", "64 KiB", "4 KiB ÷ 64 KiB", "target", ""], out)


def ooc_kernel():
    points = [  # (SCALE, budget, folder, file, pheap match, kernel match)
        ("18", "1/2", "2026-11-28-pagesize", "pagesize.csv",
         dict(system="uffd", mode="half", page_size="4096"), dict(system="mmap-random", mode="half")),
        ("18", "1/4", "2026-11-29-lazy-staging", "construct2.csv",
         dict(label="AI2-new-.*", system="uffd"), dict(system="mmap-random")),
        ("18", "1/8", "2026-11-27-eighth-after-fills", "construct.csv",
         dict(system="uffd"), dict(system="mmap-random")),
        ("20", "1/2", "2026-11-27-graph-defaults", "construct.csv",
         dict(system="uffd", scale="20"), dict(system="mmap-random", scale="20")),
        ("20", "1/4", "2026-11-29-s20-quarter-ak", "construct.csv",
         dict(system="uffd"), dict(system="mmap-random")),
        ("20", "1/2", "2026-11-29-s20-half-mmap", "construct.csv",
         dict(system="uffd"), dict(system="mmap")),
    ]
    out = []
    for sc, budget, folder, name, pm, km in points:
        rows = read(folder, name)
        p, pdnf = rates(rows, **pm)
        k, kdnf = rates(rows, **km)
        # per round: the i-th pheap run against the i-th kernel run of the same file
        ratios = ", ".join(("≥ " if kdnf and not pdnf else "") + x(a / b) for a, b in zip(p, k))
        kernel = km["system"] + (" (default advice)" if km["system"] == "mmap" else "")
        status = "did not finish" if kdnf else "ok"
        out.append([sc, budget, kernel, len(p), ratios, status, f"`{folder}`"])
    return table(["SCALE", "budget", "kernel path", "rounds", "pheap ÷ kernel (arcs/s, per round)",
                  "kernel run", "folder"], out)


def ooc_ab():
    rows = rows_of("ooc-ab")
    out = []
    for mode, col, what in (("half", "ingest_s", "median ingest"),
                            ("quarter", "arcs_per_s", "median arcs/s by progress (DNF in 120 s)")):
        v = {}
        for who in ("base", "main"):
            got = [float(r[col]) for r in rows if r["label"].startswith(who) and r["mode"] == mode]
            v[who] = (med(got), len(got))
        b, a = v["base"][0], v["main"][0]
        ratio = b / a if col == "ingest_s" else a / b
        fmt = (lambda t: s(t)) if col == "ingest_s" else (lambda t: f"{t / 1000:.1f} k")
        out.append([mode.replace("half", "1/2").replace("quarter", "1/4"), what, v["base"][1],
                    fmt(b), fmt(a), x(ratio, 3)])
    return table(["S18 budget", "measure", "pairs", "before (671f42c)", "after", "after ÷ before (speed)"],
                 out)


def tiny():
    rows = rows_of("tiny")
    out = []
    for page, buf in (("4096", "16"), ("4096", "64"), ("65536", "16"), ("65536", "4")):
        got = [r for r in rows if r["page"] == page and r["buffer_pages"] == buf]
        f = lambda a, b: med([float(r[a]) / float(r[b]) for r in got])
        out.append([f"{int(page) // 1024} KiB, {buf} pages", len(got),
                    s(med([float(r["pheap_s"]) for r in got]), 1), x(f("pheap_s", "disk2_s")),
                    x(f("floor2_s", "disk2_s")), x(f("pheap_s", "floor2_s"))])
    return table(["page, buffer", "rounds", "pheap, median", "pheap ÷ disk alone",
                  "floor ÷ disk alone", "pheap ÷ floor"], out)


def cold_read():
    rows = rows_of("cold-read")
    get = {(r["scale"], r["command"], r["system"], r["state"]): r for r in rows}
    out = []
    for sc in ("18", "20"):
        for cmd in ("stats", "bfs", "cc", "export"):
            pc, mc = get[(sc, cmd, "pheap", "cold")], get[(sc, cmd, "mmap", "cold")]
            pw, mw = get[(sc, cmd, "pheap", "warm")], get[(sc, cmd, "mmap", "warm")]
            out.append([sc, cmd, pc["wall_s"][:-1] + " s", mc["wall_s"][:-1] + " s", pc["vs_mmap"],
                        pw["wall_s"][:-1] + " s", mw["wall_s"][:-1] + " s", pw["vs_mmap"], pc["vs_cat"]])
    return table(["SCALE", "command", "pheap cold", "mmap cold", "÷ mmap", "pheap warm", "mmap warm",
                  "÷ mmap", "cold ÷ `cat`"], out)


def scan():
    rows = rows_of("scan")
    names = [("dd", "dd `iflag=direct bs=1M`"), ("pheap", "pheap (fault read-ahead)"),
             ("pheap-backward", "pheap backwards"), ("pheap-prefetch", "pheap, `prefetch_all` first"),
             ("pheap-quarter", "pheap, buffer a quarter of the data"),
             ("pheap-noahead", "pheap `PHEAP_READ_AHEAD=0`"), ("mmap", "mmap, default advice"),
             ("mmap-random", "mmap `MADV_RANDOM`")]
    col = lambda case, c: [float(r[c]) for r in rows if r["case"] == case]
    dd = med(col("dd", "mib_per_s"))
    out = []
    for case, label in names:
        rate = med(col(case, "mib_per_s"))
        pheap = case.startswith("pheap")
        per = med(col(case, "pages_read")) / med(col(case, "store_read_requests")) if pheap else None
        out.append([label, f"{rate:.0f}", f"{rate / dd:.2f}",
                    f"{med(col(case, 'faults')):.0f}" if pheap else "—",
                    f"{per:.0f}" if pheap else "—"])
    rounds = len({r["round"] for r in rows})
    return table(["case (1 GiB, cold)", f"MiB/s, median of {rounds}", "of dd's", "faults",
                  "pages per store request"], out)


def durability():
    rows = rows_of("durability")
    last, ratio = {}, {}
    for r in rows:  # each persist_bench invocation times its dd right after its writer
        key = (r["label"], r["page_size"], r["bytes"])
        if r["bench"] == "dur_flush_close":
            last[key] = float(r["seconds"])
        elif r["bench"] == "dd_direct_fdatasync" and key in last:
            ratio.setdefault(key, []).append(last.pop(key) / float(r["seconds"]))
    m = lambda key, bench: med([float(r["seconds"]) for r in rows
                                if (r["label"], r["page_size"], r["bytes"]) == key and r["bench"] == bench])
    out = []
    for label, gib, page in (("format3", 1, "4096"), ("format3", 1, "65536"), ("format3", 4, "4096"),
                             ("format3", 4, "65536"), ("format3-buffer4g", 16, "65536")):
        key = (label, page, str(gib << 30))
        if key not in ratio:
            key = (label, page, str(gib << 30))
        f2 = ("format2" + label[7:], page, str(gib << 30))
        fc = med(ratio[key])
        out.append([f"{gib} GiB" + (", 4 GiB buffer" if gib == 16 else ""), f"{int(page) // 1024} KiB",
                    len(ratio[key]), f"{m(key, 'dur_device_write_ratio'):.3f}",
                    f"{fc:.2f}" if gib != 16 else f"({fc:.2f})",
                    f"{med(ratio[f2]):.1f}" if f2 in ratio and gib != 16 else "—",
                    f"{m(key, 'dur_reopen_clean') * 1000:.1f} ms",
                    f"{m(key, 'dur_reopen_after_kill') * 1000:.1f} ms"])
    return table(["data", "page", "n", "device bytes per data byte (≤ 1.1)",
                  "flush + close ÷ dd (≤ 1.5)", "same, format 2", "reopen after clean close",
                  "reopen after kill -9 (≤ 50 ms)"], out)


def tool_ingest():
    rows = rows_of("tool-ingest", header=False)
    t = lambda budget, form: [float(r[2]) for r in rows if r[0] == budget and r[1] == form]
    out = []
    for form, label in (("tool", "`pheap-graph ingest` (defaults)"),
                        ("tool-no-lookahead", "`--prefetch-window 0`"),
                        ("kernel-mmap-random", "kernel-mmap backend, `MADV_RANDOM`"),
                        ("mpi-np2", "`mpirun -np 2`, each rank grouped"),
                        ("mpi-np2-old", "`mpirun -np 2`, 031be46 (per record)")):
        row = [label]
        for budget in ("incore", "half"):
            v = t(budget, form)
            row += [s(med(v)), x(med(v) / med(t(budget, "tool")))] if v else ["–", "–"]
        out.append(row)
    return table(["form", "in core, median of 3", "÷ tool", "half (119 MiB cgroup)", "÷ tool"], out)


def python_():
    rows = rows_of("python")
    out = []
    for r in rows:
        met = {"True": "met", "False": "**missed**"}.get(r["met"], "")
        out.append([r["case"], r["measure (median of rounds)"], f"{float(r['value']):.3f}",
                    r["target"], met])
    return table(["case", "measure (median of 3)", "value", "target", ""], out)


def random_bfs_lists():
    rows = rows_of("random-bfs-lists")
    names = {"before": "the pager before the cold-read work (671f42c), `O_DIRECT`",
             "look-ahead": "4 look-ahead threads (d09d09c), `O_DIRECT`",
             "now-direct": "lists where the index found them, 1024 asked ahead, `O_DIRECT`",
             "now": "the same, default read-only open (through the page cache)",
             "mmap-random": "kernel mmap, `MADV_RANDOM`, same cgroup",
             "mmap": "kernel mmap, default advice, same cgroup"}
    wall = {k: med([float(r["wall_s"]) for r in rows if r["system"] == k]) for k in names}
    out = []
    for k, label in names.items():
        got = [r for r in rows if r["system"] == k]
        reads = med([float(r["device_reads"]) / float(r["wall_s"]) for r in got])
        out.append([label, str(len(got)), s(wall[k], 2), x(wall["before"] / wall[k]),
                    x(wall["mmap-random"] / wall[k]), f"{reads / 1000:.1f} k",
                    f"{med([float(r['avg_inflight']) for r in got]):.2f}"])
    return table(["system", "runs", "wall, median", "vs before", "vs mmap `MADV_RANDOM`",
                  "device reads/s", "reads in flight, mean"], out)


def flush():
    rows = rows_of("flush")

    def form(r):  # "flush-s20-wb250-r1" -> "250"; no write-behind -> ""
        m = re.search(r"-wb(\d+)-", r["label"])
        return m.group(1) if m else ""

    out = []
    mm = med([float(r["flush_s"]) for r in rows if r["system"] == "mmap"])
    mm_close = med([float(r["flush_s"]) + float(r["close_s"]) for r in rows if r["system"] == "mmap"])
    for system, wb, label in (("mmap", "", "mmap backend (Metall's way: msync)"),
                              ("uffd-grouped", "", "pheap, grouped build (as `pheap-graph ingest`)"),
                              ("uffd-grouped", "1000", "the same, write-behind every 1 s"),
                              ("uffd-grouped", "250", "the same, write-behind every 250 ms")):
        got = [r for r in rows if r["system"] == system and form(r) == wb]
        f = med([float(r["flush_s"]) for r in got])
        fc = med([float(r["flush_s"]) + float(r["close_s"]) for r in got])
        written = med([float(r["pager_bytes_written"]) for r in got])
        out.append([label, f"{min(float(r['flush_s']) for r in got):.2f}-{max(float(r['flush_s']) for r in got):.2f} s",
                    x(f / mm), x(fc / mm_close),
                    f"{written / 1e6:.0f} MB" if written else "—"])
    return table(["system", "flush, 3 runs", "flush ÷ mmap's (≤ 1.1x)", "flush + close ÷ mmap's",
                  "pager bytes written, build + flush"], out)


def huge_incore():
    (folder, _, _), = MANIFEST["huge-incore"]
    walk, tool, rand = read(folder, "walk.csv"), read(folder, "tool.csv"), read(folder, "random.csv")
    rand = [r for r in rand if not r["rep"].startswith("#")]  # huge_bench's summary lines
    rounds = len({r["round"] for r in walk})
    reps = len({r["rep"] for r in rand})
    cfg = ("4k-off", "2m-off", "2m-always")

    def m(rows, col, **match):
        return med([float(r[col]) for r in rows if all(r[k] == v for k, v in match.items())])

    def verdict(v, target):
        return "met" if v >= target else "**missed**"

    out = []

    # Speed: the target is 2 MiB entries against 4 KiB entries at the same (2 MiB) page size,
    # where only the mapping differs; the ratio against 4 KiB pages is shown beside it.
    def timed(what, rows, col, algo):
        a, b, c = (m(rows, col, label=k, algo=algo) for k in cfg)
        out.append([what, s(a, 1), s(b, 1), s(c, 1), x(b / c), x(a / c), "≥ 1.3x", verdict(b / c, 1.3)])

    for algo, name in (("bfs", "BFS"), ("cc", "CC")):
        timed(f"{name}: the walk, CPU", walk, "walk_cpu_s", algo)
        timed(f"{name}: the walk, wall", walk, "walk_s", algo)
        timed(f"`pheap-graph {algo}`, wall", tool, "wall_s", algo)
    rm = {k: [r for r in rand if r["mode"] == k] for k in ("off4k", "off", "always")}
    for col, what in (("dependent_ns_per_read", "random reads, dependent: ns (CPU)"),
                      ("independent_ns_per_read", "random reads, independent: ns (CPU)")):
        a, b, c = (med([float(r[col]) for r in rm[k]]) for k in ("off4k", "off", "always"))
        out.append([f"{what}, {reps} reps", f"{a:.1f}", f"{b:.1f}", f"{c:.1f}", x(b / c), x(a / c),
                    "≥ 1.3x", verdict(b / c, 1.3)])
    # Faults: a pager fault fills a page, whatever its entries, so 4 KiB entries and 2 MiB
    # entries at 2 MiB pages fault alike; the target is met or missed against 4 KiB pages.
    a, b, c = (med([float(r["faults_per_gib"]) for r in rm[k]]) for k in ("off4k", "off", "always"))
    out.append([f"faults per GiB, random reads (their fill), {reps} reps", f"{a:.0f}", f"{b:.0f}", f"{c:.0f}",
                x(b / c, 1), x(a / c, 1), "≥ 100x (4 KiB pages ÷ 2 MiB entries)", verdict(a / c, 100)])
    gib = {k: float(next(r["heap_bytes"] for r in walk if r["label"] == k)) / 2**30 for k in cfg}
    for algo in ("bfs", "cc"):
        a, b, c = (m(tool, "pager_faults", label=k, algo=algo) / gib[k] for k in cfg)
        out.append([f"faults per GiB, `pheap-graph {algo}` (its read-ahead: prefetch_all)",
                    f"{a:.0f}", f"{b:.0f}", f"{c:.0f}", x(b / c, 1), x(a / c, 1),
                    "≥ 100x (4 KiB pages ÷ 2 MiB entries)", verdict(a / c, 100)])
    for algo, name in (("bfs", "BFS"), ("cc", "CC")):
        b, c = (m(walk, "walk_cpu_s", label=k, algo=algo) for k in ("2m-off+thp", "2m-always+thp"))
        out.append([f"{name}: the walk, CPU, its DRAM arrays on THP too (control)", "—", s(b, 1), s(c, 1),
                    x(b / c), "—", "", ""])
    return table([f"measure (median of {rounds} rounds unless said)", "4 KiB pages", "2 MiB pages, 4 KiB entries",
                  "2 MiB pages, 2 MiB entries", "4 KiB entries ÷ 2 MiB entries", "4 KiB pages ÷ 2 MiB entries",
                  "target", "verdict"], out)


def huge_construct():
    rows = rows_of("huge-construct")
    assert all(r["status"] == "ok" for r in rows)
    form = lambda r: r["label"].split("-", 1)[1]  # "r2-2m-always" -> "2m-always"
    rounds = len({r["label"].split("-", 1)[0] for r in rows})

    def m(f, col):  # (one row kept only its first 13 columns: NOTES.md)
        return med([float(r[col]) for r in rows if form(r) == f and r[col] != ""])

    off, k4 = m("2m-off", "ingest_s"), m("4k", "ingest_s")
    out = []
    for f, label in (("4k", "4 KiB pages"), ("2m-off", "2 MiB pages, `--huge-pages off` (4 KiB entries)"),
                     ("2m-always-old", "2 MiB pages, `always`, before zero-ahead (666d127)"),
                     ("2m-always", "2 MiB pages, `always`, with zero-ahead"),
                     ("dram", "`std::allocator` (no persistence)")):
        i = m(f, "ingest_s")
        faults = "—" if f == "dram" else f"{m(f, 'pager_faults'):.0f}"
        out.append([label, s(i), s(m(f, "flush_s")) if f != "dram" else "—", x(off / i), x(k4 / i), faults])
    return table([f"construction in core (median of {rounds})", "ingest", "flush", "2 MiB `off` ÷ this",
                  "4 KiB pages ÷ this", "pager faults"], out)


def huge_auto():
    (folder, _, _), = MANIFEST["huge-auto"]
    cons = read(folder, "construct.csv")
    walk, tool = read(folder, "incore/walk.csv"), read(folder, "incore/tool.csv")
    assert all(r["status"] == "ok" for r in cons)
    form = lambda r: r["label"].split("-", 1)[1]  # "r2-2m-auto" -> "2m-auto"

    def mc(rows, f, mode):
        return med([float(r["ingest_s"]) for r in rows if form(r) == f and r["mode"] == mode])

    def mw(rows, col, label, algo):
        return med([float(r[col]) for r in rows if r["label"] == label and r["algo"] == algo])

    def verdict(v, target):
        return "met" if v >= target else "**missed**"

    out = []
    n = len({r["label"].split("-", 1)[0] for r in cons})
    off, auto, always = (mc(cons, f, "incore") for f in ("2m-off", "2m-auto", "2m-always"))
    out.append([f"construction in core, SCALE 22 (ingest, median of {n})", s(off), s(always), s(auto),
                x(off / auto), "≥ 0.97x; ≥ 1.1x", f"{verdict(off / auto, 0.97)}; {verdict(off / auto, 1.1)}"])
    n = len({r["round"] for r in walk})
    for algo, name in (("bfs", "BFS"), ("cc", "CC")):
        off, always, auto = (mw(walk, "walk_s", k, algo) for k in ("2m-off", "2m-always", "2m-auto"))
        settled = mw(walk, "walk_s", "2m-auto-settled", algo)
        out.append([f"{name}, SCALE 23: the walk, wall (median of {n})", s(off), s(always),
                    f"{s(auto)} (settled first: {s(settled)})", f"{x(off / auto)} ({x(off / settled)})",
                    "≥ 1.3x", verdict(max(off / auto, off / settled), 1.3)])
        off, always, auto = (mw(tool, "wall_s", k, algo) for k in ("2m-off", "2m-always", "2m-auto"))
        out.append([f"`pheap-graph {algo}`, SCALE 23, wall (median of {n})", s(off), s(always), s(auto),
                    x(off / auto), "≥ 1.3x", verdict(off / auto, 1.3)])
    mapped = min(int(r["huge_mapped_bytes"]) for r in walk if r["label"] == "2m-auto")
    heap = min(int(r["heap_bytes"]) for r in walk if r["label"] == "2m-auto")
    out.append(["the walks' heap mapped with 2 MiB entries by auto's promoter, at the walk's end (least of the runs)",
                "—", "—", f"{mapped / heap * 100:.0f} %", "", "", ""])
    return table(["measure", "`off` (4 KiB entries)", "`always`", "`auto`", "`off` ÷ `auto`", "target", "verdict"], out)


MAKERS = {"incore-peers": incore_peers, "incore-pagesize": incore_pagesize, "ooc-kernel": ooc_kernel,
          "ooc-ab": ooc_ab, "tiny": tiny, "cold-read": cold_read, "scan": scan,
          "flush": flush,
          "random-bfs-lists": random_bfs_lists,
          "durability": durability, "tool-ingest": tool_ingest, "python": python_,
          "huge-incore": huge_incore, "huge-construct": huge_construct, "huge-auto": huge_auto}

MARK = re.compile(r"(<!-- table: ([a-z0-9-]+) -->\n)(.*?)(<!-- end table -->)", re.S)


def render(text):
    seen = set()

    def sub(mo):
        name = mo.group(2)
        if name not in MAKERS:
            sys.exit(f"bench/tables.py: unknown table {name!r} in bench/README.md")
        seen.add(name)
        return mo.group(1) + MAKERS[name]() + "\n" + mo.group(4)

    out = MARK.sub(sub, text)
    missing = set(MAKERS) - seen
    if missing:
        sys.exit(f"bench/tables.py: no markers for {', '.join(sorted(missing))} in bench/README.md")
    return out


def broken_links(md):
    """Relative links ([..](path#anchor)) and `results/<folder>` paths of md that do not resolve."""
    base, text, bad = os.path.dirname(md), open(md).read(), []
    for mo in re.finditer(r"\]\(([^)]+)\)", text):
        target = mo.group(1)
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(base, path)) if path else md
        if not os.path.exists(full):
            bad.append(target)
        elif anchor:
            heads = [re.sub(r"[^a-z0-9 -]", "", h.strip().lower()).replace(" ", "-")
                     for h in re.findall(r"^#+ (.*)$", open(full).read(), re.M)]
            if anchor not in heads:
                bad.append(target)
    for mo in re.finditer(r"`(?:bench/)?(results/[0-9][^`/ ]*)", text):
        if not os.path.exists(os.path.join(base, mo.group(1))):
            bad.append(mo.group(1))
    return bad


def main(argv):
    if "--list" in argv:
        for name, sources in MANIFEST.items():
            for folder, name_, cols in sources:
                print(f"{name}: bench/results/{folder}/{name_} ({cols})")
        return 0
    if "-h" in argv or "--help" in argv:
        print(__doc__.strip())
        return 0
    with open(README) as f:
        old = f.read()
    new = render(old)
    if "--check" in argv:
        rc = 0
        if new != old:
            print("bench/README.md is out of date: run python3 bench/tables.py", file=sys.stderr)
            rc = 1
        for md in (README, os.path.join(BENCH, "DECISIONS.md")):
            for target in broken_links(md):
                print(f"{os.path.relpath(md, BENCH)}: link does not resolve: {target}", file=sys.stderr)
                rc = 1
        return rc
    if new != old:
        with open(README, "w") as f:
            f.write(new)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
