"""kill -9 of a Python writer: the datastore reopens at the last watermark; add_edges resumes."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np

import pheap
from conftest import run

WRITER = textwrap.dedent(
    """
    import sys, numpy as np, pheap
    ds = pheap.create(sys.argv[1], capacity=1 << 30)
    a = ds.create_array("a", 1 << 16, "int64")
    for i in range(1, 1000000):
        a[:] = i
        e = ds.flush()
        print(i, e, flush=True)       # durable: epoch e holds a == i
        a[: 1 << 15] = -i             # half-written, never flushed
    """
)


def test_a_killed_python_writer_reopens_at_its_last_flush(ds_path):
    p = subprocess.Popen([sys.executable, "-c", WRITER, ds_path], stdout=subprocess.PIPE, text=True)
    last = None
    for line in p.stdout:
        last = tuple(int(x) for x in line.split())
        if last[0] >= 25:
            break
    p.send_signal(signal.SIGKILL)
    p.wait()
    with pheap.open(ds_path, read_only=True) as ds:
        a = ds.array("a")
        value, epoch = int(a[-1]), ds.epoch
        # the watermark is one flush exactly: every element of the same flush, none half-written
        assert np.all(a == value), np.unique(a)
        assert value >= last[0] and epoch >= last[1]
        assert (value, epoch) in {(last[0], last[1]), (last[0] + 1, last[1] + 1)}
        del a


INGEST = textwrap.dedent(
    """
    import sys, numpy as np, pheap
    rng = np.random.default_rng(7)
    src = rng.integers(0, 1 << 14, size=400_000, dtype=np.uint64)
    dst = rng.integers(0, 1 << 14, size=400_000, dtype=np.uint64)
    g = pheap.graph.open(sys.argv[1], read_only=False)
    print("open", flush=True)
    print(g.add_edges(src, dst, flush_every=20_000, batch_size=20_000), flush=True)
    g.close()
    """
)


def test_add_edges_killed_and_rerun_resumes_edge_for_edge(tmp_path, tools):
    cut, whole = str(tmp_path / "cut"), str(tmp_path / "whole")
    for path in (cut, whole):
        pheap.graph.create(path, directed=True).close()
    run(sys.executable, "-c", INGEST, whole)

    first = pheap.info(cut)["epoch"]
    p = subprocess.Popen([sys.executable, "-c", INGEST, cut], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "open"  # from now on info() reads the superblock
    deadline = time.time() + 120
    while pheap.info(cut)["epoch"] < first + 3 and p.poll() is None and time.time() < deadline:
        time.sleep(0.005)
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert p.returncode == -signal.SIGKILL, "the ingestion finished before it could be killed"
    g = pheap.graph.open(cut)
    unfinished = g.ingestion()["unfinished"]
    assert unfinished is not None and 0 < unfinished["edges"] < 400_000
    assert unfinished["edges"] % 20_000 == 0  # a watermark holds whole batches only
    g.close()

    out = run(sys.executable, "-c", INGEST, cut).stdout
    assert "'resumed': True" in out and f"'resumed_at': {unfinished['edges']}" in out
    ex_cut = run(tools["pheap-graph"], "export", "--datastore", cut, "-q").stdout
    ex_whole = run(tools["pheap-graph"], "export", "--datastore", whole, "-q").stdout
    assert ex_cut == ex_whole and len(ex_cut.splitlines()) == 400_000
    rerun = run(sys.executable, "-c", INGEST, cut).stdout
    assert "'already_done': True" in rerun and "'added': 0" in rerun
