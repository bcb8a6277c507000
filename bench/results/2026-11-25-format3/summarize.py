#!/usr/bin/env python3
"""summarize.py [DIR] — the figures of bench/README.md's durability section from compare.sh's
durability.csv and construct.csv: medians over the interleaved reps, and the per-invocation
ratio flush+close / dd (each persist_bench invocation times its own dd right after its writer)."""
import csv, os, statistics, sys
from collections import defaultdict

d = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
med = statistics.median
vals = defaultdict(list)          # (label, bench, page, bytes) -> [seconds ...] in run order
ratio_dd = defaultdict(list)      # (label, page, bytes) -> [flush_close / dd] per invocation
pending = {}
with open(os.path.join(d, "durability.csv")) as f:
    for r in csv.DictReader(f):
        if r["label"] == "label":
            continue
        k = (r["label"], int(r["page_size"]), int(r["bytes"]))
        s = float(r["seconds"])
        vals[(r["label"], r["bench"]) + k[1:]].append(s)
        if r["bench"] == "dur_flush_close":
            pending[k] = s
        elif r["bench"] == "dd_direct_fdatasync" and k in pending:
            ratio_dd[k].append(pending.pop(k) / s)

def fmt(xs, scale=1.0, nd=2):
    if not xs:
        return "–"
    m = med(xs) * scale
    lo, hi = min(xs) * scale, max(xs) * scale
    return f"{m:.{nd}f} ({lo:.{nd}f}–{hi:.{nd}f}, n={len(xs)})"

print("label | page | GiB | bench | median (min–max, n)")
for (label, bench, page, size), xs in sorted(vals.items(), key=lambda kv: (kv[0][3], kv[0][2], kv[0][1], kv[0][0])):
    ms = bench.startswith("dur_reopen")
    print(f"{label} | {page} | {size >> 30} | {bench} | {fmt(xs, 1000 if ms else 1, 1 if ms else 3)}{' ms' if ms else ''}")
print()
print("flush+close / dd of the same bytes, per invocation")
for (label, page, size), xs in sorted(ratio_dd.items(), key=lambda kv: (kv[0][2], kv[0][1], kv[0][0])):
    print(f"{label} | {page} | {size >> 30} GiB | {fmt(xs)} | {' '.join(f'{x:.2f}' for x in xs)}")

cpath = os.path.join(d, "construct.csv")
if os.path.exists(cpath):
    print()
    print("construct (graph), per row: label system page status ingest_s flush_s close_s flush+close "
          "io_write/disk (/proc/self/io write_bytes over the datastore's bytes on disk)")
    mmap_fc = {}                  # label -> flush+close of the mmap row of the current invocation
    per = defaultdict(list)       # (label, what, page) -> values, one per invocation
    with open(cpath) as f:
        for r in csv.DictReader(f):
            if r["label"] == "label" or r["status"] != "ok":
                continue
            fc = float(r["flush_s"]) + float(r["close_s"])
            w = float(r["io_write_bytes"]) / (float(r["disk_bytes"]) or 1)
            print(f'{r["label"]} {r["system"]} {r["page_size"]} {r["status"]} {r["ingest_s"]} {r["flush_s"]} '
                  f'{r["close_s"]} {fc:.3f} {w:.2f}')
            key = (r["label"], r["system"], r["page_size"])
            per[key + ("flush+close s",)].append(fc)
            per[key + ("io_write/disk",)].append(w)
            if r["system"] == "mmap":     # compare.sh lists mmap first in each invocation
                mmap_fc[r["label"]] = fc
            elif r["label"] in mmap_fc:
                per[key + ("flush+close / mmap's, same invocation",)].append(fc / mmap_fc[r["label"]])
    print()
    print("construct medians (min-max, n)")
    for k, xs in sorted(per.items()):
        print(" ".join(k), "|", fmt(xs))
