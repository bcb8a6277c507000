"""The Python package against its C++ peers, on one graph, in interleaved rounds.

    python bench.py --tools BUILD/bin --dir SCRATCH --out RESULTS --scale 20 --rounds 3

Writes RESULTS/python.csv (one row per measurement: round, case, system, seconds, note) and
RESULTS/summary.csv (medians, ratios, targets). bench/python/run.sh is the driver; the cases:

  open_degrees   a fresh process opens the graph and takes degrees() (timed inside it; also
                 with PHEAP_FAULT_FILL=faulting_thread, the tool's fill mode)
                 vs np.loadtxt of the exported edge list + the same degrees (np.bincount)
  bfs            pheap-graph bfs (whole process, wall clock) vs a fresh Python process's
                 pheap.graph.open + bfs (timed inside it, and whole process)
  add_edges      pheap-graph ingest of the binary and of the text edge list (whole process)
                 vs graph.create + add_edges of the same edges held in NumPy arrays + close
  array_write    writing a 256 MiB float64 array + flush(): pheap vs np.memmap + flush()
Each round runs every system of a case back to back, so a neighbour's load hits them alike.
"""

import argparse
import csv
import os
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

import pheap

# numpy is imported before the clock starts: an analysis script has it already (its import,
# ~0.1-0.2 s, would otherwise be charged to the first array pheap makes).
TIMED_DEGREES = """
import sys, time
import numpy, pheap
t1 = time.perf_counter()
g = pheap.graph.open(sys.argv[1])
d = g.degrees()
total = int(d.sum())  # inside the clock: a view of the heap counts only once its bytes are read
t2 = time.perf_counter()
print(t2 - t1, total)
"""

TIMED_BFS = """
import sys, time
import numpy, pheap
t1 = time.perf_counter()
g = pheap.graph.open(sys.argv[1])
level, parent = g.bfs(int(sys.argv[2]))
t2 = time.perf_counter()
print(t2 - t1, int((level != pheap.graph.UNREACHED).sum()))
"""


def wall(cmd, env=None):
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=None if env is None else {**os.environ, **env})
    dt = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"{cmd} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return dt, p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tools", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--scale", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--array-mib", type=int, default=256)
    a = ap.parse_args()
    pg = os.path.join(a.tools, "pheap-graph")
    os.makedirs(a.dir, exist_ok=True)
    os.makedirs(a.out, exist_ok=True)
    rows = []

    def record(rnd, case, system, seconds, note=""):
        rows.append({"round": rnd, "case": case, "system": system, "seconds": f"{seconds:.6f}", "note": note})
        print(f"round {rnd} {case:12s} {system:28s} {seconds:9.4f} s {note}", flush=True)

    text, binary = os.path.join(a.dir, "edges.txt"), os.path.join(a.dir, "edges.bin")
    g = os.path.join(a.dir, "g")
    exported = os.path.join(a.dir, "exported.txt")
    if not os.path.exists(text):
        wall([pg, "generate", "--scale", str(a.scale), "--output", text, "-q"])
        wall([pg, "generate", "--scale", str(a.scale), "--format", "binary", "--output", binary, "-q"])
    if not os.path.exists(g):
        wall([pg, "ingest", "--datastore", g, "--undirected", "--format", "binary", "-q", binary])
        wall([pg, "export", "--datastore", g, "--output", exported, "-q"])
    # the edges as a Python pipeline holds them: NumPy arrays (the binary file: src, dst u64)
    raw = np.fromfile(binary, dtype=np.uint64)  # records of (src, dst) u64, no header
    src, dst = raw[0::2].copy(), raw[1::2].copy()
    del raw
    with pheap.graph.open(g) as gr:
        ids, deg = gr.vertices(), gr.degrees()
        source = int(ids[np.argmax(deg)])
        arcs = gr.num_arcs
    print(f"graph: scale {a.scale}, {len(ids)} vertices, {arcs} arcs, BFS source {source}", flush=True)

    for rnd in range(1, a.rounds + 1):
        # -- open + degrees vs parsing the exported list
        dt, out = wall([sys.executable, "-c", TIMED_DEGREES, g])
        inner, total = out.split()
        record(rnd, "open_degrees", "pheap.graph.open+degrees", float(inner), f"process {dt:.3f}s sum {total}")
        dt, out = wall([sys.executable, "-c", TIMED_DEGREES, g], env={"PHEAP_FAULT_FILL": "faulting_thread"})
        inner, total = out.split()
        record(rnd, "open_degrees", "same, faulting-thread fills", float(inner), f"process {dt:.3f}s sum {total}")
        t = time.perf_counter()
        e = np.loadtxt(exported, dtype=np.uint64, comments="#")
        top = int(ids[-1]) + 1
        d = np.bincount(e[:, 0].astype(np.int64), minlength=top) + np.bincount(e[:, 1].astype(np.int64), minlength=top)
        d -= np.bincount(e[e[:, 0] == e[:, 1], 0].astype(np.int64), minlength=top)  # a loop is one arc
        record(rnd, "open_degrees", "np.loadtxt+bincount", time.perf_counter() - t, f"sum {int(d.sum())}")
        del e, d
        # -- BFS
        dt, _ = wall([pg, "bfs", "--datastore", g, "--source", str(source)])
        record(rnd, "bfs", "pheap-graph bfs", dt, "whole process")
        dt, out = wall([sys.executable, "-c", TIMED_BFS, g, str(source)])
        inner, reached = out.split()
        record(rnd, "bfs", "python open+bfs", float(inner), f"process {dt:.3f}s reached {reached}")
        record(rnd, "bfs", "python process", dt, "interpreter + import included")
        # -- ingestion
        for system, cmd in (("pheap-graph ingest binary", ["--format", "binary", binary]),
                            ("pheap-graph ingest text", [text])):
            tgt = os.path.join(a.dir, "ingest")
            shutil.rmtree(tgt, ignore_errors=True)
            dt, _ = wall([pg, "ingest", "--datastore", tgt, "--undirected", "-q"] + cmd)
            record(rnd, "add_edges", system, dt, "whole process")
        tgt = os.path.join(a.dir, "ingest")
        shutil.rmtree(tgt, ignore_errors=True)
        t = time.perf_counter()
        with pheap.graph.create(tgt, directed=False) as w:
            rep = w.add_edges(src, dst)
        record(rnd, "add_edges", "python add_edges", time.perf_counter() - t, f"added {rep['added']}")
        shutil.rmtree(tgt, ignore_errors=True)
        # -- persistent array writes + flush vs np.memmap
        n = (a.array_mib << 20) // 8
        values = np.arange(n, dtype=np.float64)
        arr_ds = os.path.join(a.dir, "arr")
        shutil.rmtree(arr_ds, ignore_errors=True)
        with pheap.create(arr_ds, capacity=(a.array_mib + 64) << 20) as ds:
            v = ds.create_array("x", n, "float64")
            t = time.perf_counter()
            v[:] = values
            ds.flush()
            record(rnd, "array_write", "pheap array + flush", time.perf_counter() - t, f"{a.array_mib} MiB")
            del v
        shutil.rmtree(arr_ds, ignore_errors=True)
        mm_file = os.path.join(a.dir, "memmap.f64")
        if os.path.exists(mm_file):
            os.remove(mm_file)
        m = np.memmap(mm_file, dtype=np.float64, mode="w+", shape=(n,))
        t = time.perf_counter()
        m[:] = values
        m.flush()
        record(rnd, "array_write", "np.memmap + flush", time.perf_counter() - t, f"{a.array_mib} MiB")
        del m
        os.remove(mm_file)

    with open(os.path.join(a.out, "python.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["round", "case", "system", "seconds", "note"])
        w.writeheader()
        w.writerows(rows)

    med = {}
    for r in rows:
        med.setdefault((r["case"], r["system"]), []).append(float(r["seconds"]))
    med = {k: statistics.median(v) for k, v in med.items()}
    mib = a.array_mib
    summary = [
        ("open_degrees", "pheap.graph.open+degrees (s)", med[("open_degrees", "pheap.graph.open+degrees")],
         "<= 0.050 s", med[("open_degrees", "pheap.graph.open+degrees")] <= 0.050),
        ("open_degrees", "same, faulting-thread fills (s)", med[("open_degrees", "same, faulting-thread fills")],
         "<= 0.050 s", med[("open_degrees", "same, faulting-thread fills")] <= 0.050),
        ("open_degrees", "np.loadtxt / pheap (x)",
         med[("open_degrees", "np.loadtxt+bincount")] / med[("open_degrees", "pheap.graph.open+degrees")], "report", ""),
        ("bfs", "python open+bfs / pheap-graph bfs (x)",
         med[("bfs", "python open+bfs")] / med[("bfs", "pheap-graph bfs")], "<= 1.10",
         med[("bfs", "python open+bfs")] / med[("bfs", "pheap-graph bfs")] <= 1.10),
        ("bfs", "python process / pheap-graph bfs (x)",
         med[("bfs", "python process")] / med[("bfs", "pheap-graph bfs")], "report", ""),
        ("add_edges", "add_edges / ingest binary (x)",
         med[("add_edges", "python add_edges")] / med[("add_edges", "pheap-graph ingest binary")], "<= 1.20",
         med[("add_edges", "python add_edges")] / med[("add_edges", "pheap-graph ingest binary")] <= 1.20),
        ("add_edges", "add_edges / ingest text (x)",
         med[("add_edges", "python add_edges")] / med[("add_edges", "pheap-graph ingest text")], "<= 1.20",
         med[("add_edges", "python add_edges")] / med[("add_edges", "pheap-graph ingest text")] <= 1.20),
        ("array_write", "pheap MB/s", mib * 1.048576 / med[("array_write", "pheap array + flush")], "report", ""),
        ("array_write", "np.memmap MB/s", mib * 1.048576 / med[("array_write", "np.memmap + flush")], "report", ""),
        ("array_write", "pheap speed / np.memmap speed (x)",
         med[("array_write", "np.memmap + flush")] / med[("array_write", "pheap array + flush")], ">= 0.80",
         med[("array_write", "np.memmap + flush")] / med[("array_write", "pheap array + flush")] >= 0.80),
    ]
    with open(os.path.join(a.out, "summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case", "measure (median of rounds)", "value", "target", "met"])
        for case, what, value, target, met in summary:
            w.writerow([case, what, f"{value:.4f}", target, met])
            print(f"{case:12s} {what:40s} {value:10.4f}  target {target:9s} {met}")


if __name__ == "__main__":
    main()
