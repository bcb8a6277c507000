"""pheap.graph against the pheap-graph tool on the same datastores."""

import subprocess
from collections import Counter

import numpy as np
import pytest

import pheap
from conftest import run, tool_json


def rows(path):
    return np.loadtxt(path, dtype=np.uint64, comments="#", ndmin=2)


def test_counts_and_degrees_equal_the_tools(small_graph, tools):
    ds, _ = small_graph
    stats = tool_json(tools["pheap-graph"], "stats", "--datastore", ds, "--degrees", "--json")
    with pheap.graph.open(ds) as g:
        assert (g.num_vertices, g.num_arcs) == (stats["vertices"], stats["arcs"])
        assert g.directed is False and g.weights == "none" and g.watermark == stats["watermark"]
        ids, deg = g.vertices(), g.degrees()
        assert ids.dtype == np.uint64 and np.all(np.diff(ids.astype(np.int64)) > 0)
        values, counts = np.unique(deg, return_counts=True)
        assert {int(d): int(c) for d, c in zip(values, counts)} == {
            e["degree"]: e["count"] for e in stats["degree_distribution"]}
        assert g.ingestion() == stats["ingestion"]
        assert not deg.flags.writeable


def test_neighbors_are_zero_copy_views_in_stored_order(small_graph, tools):
    ds, _ = small_graph
    exported = run(tools["pheap-graph"], "export", "--datastore", ds, "-q").stdout.split("\n")
    with pheap.graph.open(ds) as g:
        ids = g.vertices()
        u = int(ids[0])
        nb = g.neighbors(u)
        assert nb.dtype == np.uint64 and not nb.flags.writeable and len(nb) == g.degrees()[0]
        # export lists u's arcs with src <= dst in stored order (undirected)
        want = [int(line.split()[1]) for line in exported if line and int(line.split()[0]) == u]
        assert [int(v) for v in nb if int(v) >= u] == want
        assert np.shares_memory(nb, g.neighbors(u))
        with pytest.raises(KeyError) as e:
            g.neighbors(1 << 60)
        assert ds in str(e.value)
        del nb


def test_bfs_and_components_equal_the_tools_output(small_graph, tools, tmp_path):
    ds, _ = small_graph
    with pheap.graph.open(ds) as g:
        ids = g.vertices()
        source = int(ids[len(ids) // 2])
        run(tools["pheap-graph"], "bfs", "--datastore", ds, "--source", source, "--output", tmp_path / "bfs.txt")
        run(tools["pheap-graph"], "cc", "--datastore", ds, "--output", tmp_path / "cc.txt")
        level, parent = g.bfs(source)
        reached = level != pheap.graph.UNREACHED
        b = rows(tmp_path / "bfs.txt")
        assert np.array_equal(b[:, 0], ids[reached])
        assert np.array_equal(b[:, 1], level[reached]) and np.array_equal(b[:, 2], parent[reached])
        c = rows(tmp_path / "cc.txt")
        assert np.array_equal(c[:, 0], ids) and np.array_equal(c[:, 1], g.components())
        with pytest.raises(pheap.InvalidArgumentError) as e:
            g.bfs(1 << 60)
        assert "not a vertex" in str(e.value) and ds in str(e.value)


def test_add_edges_builds_the_graph_the_tool_builds_and_only_once(tmp_path, tools):
    rng = np.random.default_rng(3)
    src = rng.integers(0, 5000, size=50_000)
    dst = rng.integers(0, 5000, size=50_000)
    w = rng.random(50_000, dtype=np.float32)
    text = tmp_path / "edges.txt"
    with open(text, "w") as f:
        for s, d, x in zip(src, dst, w):
            f.write(f"{s} {d} {float(x)!r}\n")  # a double that is exactly the float32
    mine, theirs = str(tmp_path / "mine"), str(tmp_path / "theirs")
    run(tools["pheap-graph"], "ingest", "--datastore", theirs, "--undirected", "--weighted", "f32", "-q",
        "--batch-size", "7000", text)
    with pheap.graph.create(mine, directed=False, weights="f32") as g:
        r = g.add_edges(src, dst, w, batch_size=7000, flush_every=14_000)
        assert r["added"] == 50_000 and not r["resumed"] and r["flushes"] == 4
        again = g.add_edges(src, dst, w)
        assert again["already_done"] and again["added"] == 0
        more = g.add_edges(src[:10], dst[:10], w[:10])  # other arrays: another job
        assert more["added"] == 10
        assert g.add_edges(src[:10], dst[:10], w[:10])["already_done"]
        d, x = g.neighbors(int(src[0]))
        assert d.dtype == np.uint64 and x.dtype == np.float32 and len(d) == len(x)
        del d, x
    a = run(tools["pheap-graph"], "export", "--datastore", theirs, "-q").stdout.splitlines()
    b = run(tools["pheap-graph"], "export", "--datastore", mine, "-q").stdout.splitlines()
    # the same graph, arc for arc (export: vertices ascending, lists in stored order), plus the
    # ten edges of the second job at the ends of their lists
    pairs = lambda lines: Counter(" ".join(x.split()[:2]) for x in lines)
    extra = Counter(f"{min(s, d)} {max(s, d)}" for s, d in zip(src[:10], dst[:10]))
    assert pairs(b) - pairs(a) == extra and not pairs(a) - pairs(b)
    assert not Counter(a) - Counter(b)  # every tool arc, weight included, is in ours


def test_add_edges_refuses_bad_input_naming_the_datastore(tmp_path):
    path = str(tmp_path / "g")
    with pheap.graph.create(path) as g:
        with pytest.raises(pheap.InvalidArgumentError) as e:
            g.add_edges([1, -2], [3, 4])
        assert path in str(e.value) and "negative" in str(e.value)
        with pytest.raises(pheap.InvalidArgumentError):
            g.add_edges([1, 2], [3])
        with pytest.raises(pheap.InvalidArgumentError):
            g.add_edges([1.5], [2])
        with pytest.raises(pheap.InvalidArgumentError):
            g.add_edges([1], [2], weights=[1.0])  # unweighted
    with pheap.graph.open(path) as r:
        with pytest.raises(pheap.ReadOnlyError):
            r.add_edges([1], [2])
    with pytest.raises(pheap.NotFoundError) as e:
        pheap.graph.open(path, name="other")
    assert "other" in str(e.value)
    with pytest.raises(pheap.ExistsError):
        pheap.graph.create(path)


def test_a_read_only_open_beside_a_cpp_writer_reads_its_last_watermark(small_graph, tools):
    ds, _ = small_graph
    with pheap.graph.open(ds) as g:
        before = (g.watermark, g.num_vertices, g.num_arcs)
    w = subprocess.Popen([tools["writer"], "hold", ds], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert w.stdout.readline().strip() == "holding"
        with pheap.graph.open(ds) as g:  # beside the writer (sparse_store/FORMAT.md)
            assert (g.watermark, g.num_vertices, g.num_arcs) == before
        with pytest.raises(pheap.LockedError) as e:
            pheap.graph.open(ds, read_only=False)
        assert ds in str(e.value)
        with pheap.open(ds, read_only=True) as r:
            assert r is not None
        info = pheap.info(ds)
        assert info["source"] == "open" and info["epoch"] > 0  # opened beside the writer too
    finally:
        w.stdin.close()
        w.wait()
    assert w.returncode == 0
    with pheap.graph.open(ds) as g:  # once it is gone
        assert g.num_vertices > 0


def test_degrees_are_heap_views_of_the_index_each_job_leaves_and_a_walk_when_a_job_stopped_early(tmp_path, tools):
    edges = tmp_path / "edges.txt"
    run(tools["pheap-graph"], "generate", "--scale", "9", "--output", edges, "-q")
    ds = str(tmp_path / "g")
    run(tools["pheap-graph"], "ingest", "--datastore", ds, "--undirected", "-q", edges)
    with pheap.open(ds, read_only=True) as d:
        assert "graph.degrees" in d.names()
    with pheap.graph.open(ds, read_only=False) as g:
        deg = g.degrees()
        # A view into the heap is an export: add_edges (which rewrites the index) refuses while it lives.
        with pytest.raises(BufferError):
            g.add_edges([1], [2])
        del deg
        g.add_edges(np.array([1, 1 << 40]), np.array([1 << 40, 5]))
        ids, deg = g.vertices(), g.degrees()
        assert int(ids[-1]) == 1 << 40 and int(deg[-1]) == 2  # the job's end rewrote the index
        with pytest.raises(BufferError):
            g.add_edges([3], [4])
        del ids, deg
        arcs = g.num_arcs
    # A job that stops at a bad line commits the edges before it, not its end: the index of the
    # last job describes another graph, and degrees() walks the graph instead.
    bad = tmp_path / "bad.txt"
    bad.write_text("7 8\n8 9\nnot an edge\n")
    p = subprocess.run([tools["pheap-graph"], "ingest", "--datastore", ds, "--undirected", "-q", str(bad)],
                       capture_output=True, text=True)
    assert p.returncode != 0, p.stdout
    stats = tool_json(tools["pheap-graph"], "stats", "--datastore", ds, "--degrees", "--json")
    assert stats["arcs"] == arcs + 4, "the two edges before the bad line are committed"
    with pheap.graph.open(ds, read_only=False) as g:
        ids, deg = g.vertices(), g.degrees()
        assert len(ids) == stats["vertices"] and int(deg.sum()) == stats["arcs"]
        values, counts = np.unique(deg, return_counts=True)
        assert {int(d): int(c) for d, c in zip(values, counts)} == {
            e["degree"]: e["count"] for e in stats["degree_distribution"]}
        g.add_edges([3], [4], abandon_incomplete=True)  # a walk's arrays are copies: no view holds the heap
        del ids, deg
