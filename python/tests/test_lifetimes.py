"""Views against close(), handles going away, and threads."""

import gc
import threading

import numpy as np
import pytest

import pheap


def test_a_view_outlives_close_and_the_datastore_is_released_when_it_goes(ds_path):
    ds = pheap.create(ds_path, capacity=1 << 30)
    a = ds.create_array("a", 1000, "int64")
    a[:] = 5
    ds.close()
    assert ds.closed
    with pytest.raises(pheap.ClosedError) as e:
        ds.array("a")
    assert ds_path in str(e.value)
    assert int(a.sum()) == 5000  # still the heap's memory, still mapped
    a[0] = 6  # written through the view after close(): flushed when the view goes
    with pytest.raises(pheap.LockedError) as e:
        pheap.open(ds_path)
    assert "1 NumPy view(s)" in str(e.value)
    del a
    gc.collect()
    with pheap.open(ds_path, read_only=True) as r:
        assert r.array("a")[0] == 6 and int(r.array("a").sum()) == 5001


def test_a_view_keeps_its_datastore_alive_after_the_handle_is_gone(ds_path):
    ds = pheap.create(ds_path, capacity=1 << 30)
    a = ds.create_array("a", (64, 64), "float32")
    a[:] = 2.0
    del ds
    gc.collect()
    assert float(a.sum()) == 2.0 * 64 * 64
    b = a[10:20, ::2]  # a NumPy view of the view keeps it too
    del a
    gc.collect()
    assert float(b.sum()) == 2.0 * 10 * 32
    del b
    gc.collect()
    with pheap.open(ds_path, read_only=True) as r:  # released: it opens
        assert r.array("a").shape == (64, 64)


def test_threads_write_read_and_flush_concurrently(ds_path):
    ds = pheap.create(ds_path, capacity=1 << 30)
    v = ds.create_vector("log", "uint64")
    arrays = [ds.create_array(f"a{i}", 10_000, "uint64") for i in range(4)]
    errors = []
    epochs = []

    def writer(i):
        try:
            for r in range(50):
                arrays[i][:] = r
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    def appender():
        try:
            for k in range(2000):
                v.append(k)
        except Exception as e:  # pragma: no cover
            errors.append(e)

    def flusher():
        try:
            for _ in range(20):
                epochs.append(ds.flush())
        except Exception as e:  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
    threads += [threading.Thread(target=appender), threading.Thread(target=flusher), threading.Thread(target=flusher)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(epochs) == 40 and len(set(epochs)) == 40  # every flush is its own watermark
    assert len(v) == 2000 and np.array_equal(v.view(), np.arange(2000))
    assert all(np.all(a == 49) for a in arrays)
    del arrays
    ds.close()
    with pheap.open(ds_path, read_only=True) as r:
        assert np.array_equal(r.array("log"), np.arange(2000))
        assert all(np.all(r.array(f"a{i}") == 49) for i in range(4))


def test_close_waits_for_a_flush_in_another_thread(ds_path):
    ds = pheap.create(ds_path, capacity=1 << 30)
    a = ds.create_array("a", 1 << 20, "uint8")
    a[:] = 1
    del a
    done = []

    def flush():
        try:
            done.append(ds.flush())
        except pheap.ClosedError:  # close() came first: also an answer, not a crash
            done.append(-1)

    t = threading.Thread(target=flush)
    t.start()
    ds.close()
    t.join()
    assert ds.closed and len(done) == 1 and done[0] != 0
    with pheap.open(ds_path, read_only=True) as r:
        assert int(r.array("a").sum()) == 1 << 20
