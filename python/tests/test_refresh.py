"""refresh(): a read-only handle beside a writer moves to its newest watermark without closing."""

import gc
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pheap


def test_a_reader_keeps_its_watermark_while_the_writer_flushes_until_refresh_moves_it(ds_path):
    w = pheap.create(ds_path, capacity=1 << 30)
    x = w.create_array("x", 100_000, "int64")
    x[:] = 1
    e1 = w.flush()
    r = pheap.open(ds_path, read_only=True)
    assert r.epoch == e1 and int(r.array("x").sum()) == 100_000

    x[::2] = 2  # half the pages change
    w.create_array("y", 10, "int8")
    e2 = w.flush()
    assert e2 > e1
    assert r.epoch == e1 and int(r.array("x").sum()) == 100_000 and "y" not in r  # still e1

    assert r.refresh() == e2
    assert r.epoch == e2 and "y" in r
    assert int(r.array("x").sum()) == 150_000
    assert r.refresh() == e2  # nothing new: the same epoch
    assert r.info()["epoch"] == e2
    r.close()
    w.close()


def test_refresh_is_refused_while_a_view_is_alive_and_moves_once_it_is_deleted(ds_path):
    w = pheap.create(ds_path, capacity=1 << 30)
    w.create_array("x", 1000, "uint32")[:] = 3
    w.flush()
    r = pheap.open(ds_path, read_only=True)
    view = r.array("x")
    w.array("x")[:] = 4
    e2 = w.flush()
    with pytest.raises(BufferError) as e:
        r.refresh()
    assert ds_path in str(e.value) and "1 NumPy view(s)" in str(e.value)
    assert int(view[0]) == 3  # the view still reads its watermark
    del view
    gc.collect()
    assert r.refresh() == e2 and int(r.array("x")[0]) == 4
    r.close()
    w.close()


def test_refresh_of_a_read_write_or_closed_handle_is_an_error_naming_the_datastore(ds_path):
    with pheap.create(ds_path, capacity=1 << 30) as w:
        with pytest.raises(pheap.InvalidArgumentError) as e:
            w.refresh()
        assert ds_path in str(e.value) and "read-write" in str(e.value)
    r = pheap.open(ds_path, read_only=True)
    r.close()
    with pytest.raises(pheap.ClosedError):
        r.refresh()


# A writer in another process: creates the graph, adds one batch of edges per line it reads
# ("more"), printing the watermark each batch ended at.
WRITER = textwrap.dedent("""
    import sys
    import numpy as np
    import pheap
    path = sys.argv[1]
    with pheap.graph.create(path, directed=True) as g:
        n = 0
        for line in sys.stdin:
            src = np.arange(n, n + 1000, dtype=np.uint64)
            g.add_edges(src, src + 1)
            n += 1000
            print(g.watermark, flush=True)
""")


def test_a_graph_reader_in_another_process_follows_the_writer_with_refresh(tmp_path):
    path = str(tmp_path / "g")
    w = subprocess.Popen([sys.executable, "-c", WRITER, path], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    try:
        w.stdin.write("more\n")
        w.stdin.flush()
        e1 = int(w.stdout.readline())
        g = pheap.graph.open(path)  # read-only, beside the writer
        assert g.watermark == e1 and g.num_arcs == 1000 and g.num_vertices == 1001
        assert np.array_equal(np.asarray(g.vertices()), np.arange(1001))
        w.stdin.write("more\n")
        w.stdin.flush()
        e2 = int(w.stdout.readline())
        assert e2 > e1
        assert g.num_arcs == 1000  # its watermark, until refresh
        gc.collect()
        assert g.refresh() == e2
        assert g.watermark == e2 and g.num_arcs == 2000 and g.num_vertices == 2001
        assert np.array_equal(np.asarray(g.vertices()), np.arange(2001))  # not the cached walk
        level, _ = g.bfs(0)
        assert int(level[2000]) == 2000
        g.close()
    finally:
        w.stdin.close()
        w.wait(timeout=60)
    assert w.returncode == 0
