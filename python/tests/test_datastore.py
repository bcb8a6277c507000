"""Datastores from Python: create, flush, reopen, info, names, errors."""

import os

import numpy as np
import pytest

import pheap
from conftest import run, tool_json


def test_flush_returns_increasing_epochs_and_reopen_reads_what_was_flushed(ds_path):
    with pheap.create(ds_path, capacity=1 << 30) as ds:
        a = ds.create_array("a", 1000, "uint32")
        a[:] = np.arange(1000)
        e1 = ds.flush()
        a[0] = 7
        e2 = ds.flush()
        assert e2 == e1 + 1 and ds.epoch == e2
        del a
    with pheap.open(ds_path, read_only=True) as ds:
        r = ds.array("a")
        assert r[0] == 7 and np.array_equal(r[1:], np.arange(1, 1000))
        assert ds.epoch >= e2


def test_info_has_the_fields_and_values_of_the_tool(ds_path, tools):
    with pheap.create(ds_path, capacity=1 << 30, description="run 1") as ds:
        ds.create_array("x", 100, "float64")
    mine = pheap.open(ds_path, read_only=True)
    ours = mine.info()
    mine.close()
    theirs = tool_json(tools["pheap"], "info", "--json", ds_path)
    # Each lists itself as the one reader of the reader table: the same watermark, its own pid.
    def me(info):
        [r] = info.pop("readers")
        assert r["this"] and r["epoch"] == info["epoch"] and not r["expired"] and r["pinned_bytes"] == 0
        return r["pid"]
    assert me(ours) == os.getpid() and me(theirs) != os.getpid()
    assert ours == theirs
    assert ours["pin_limit"] > 0 and ours["pinned_bytes"] == 0 and ours["huge_pages"]["asked"] == "off"
    assert ours["description"] == "run 1" and ours["objects"]["named"] == 1


def test_info_of_a_datastore_a_writer_holds_is_its_last_watermark(ds_path):
    w = pheap.create(ds_path, capacity=1 << 30)
    w.create_array("x", 10, "int8")
    e = w.flush()
    w.create_array("y", 10, "int8")  # not flushed: a reader beside the writer does not see it
    i = pheap.info(ds_path)  # format 4: a read-only open beside the writer (this process's)
    assert i["source"] == "open" and i["epoch"] == e and i["objects"]["named"] == 1
    w.close()
    assert pheap.info(ds_path)["source"] == "open"


def test_names_lists_every_object_with_its_recorded_type(ds_path, tools):
    run(tools["writer"], "vectors", ds_path)
    with pheap.open(ds_path, read_only=True) as ds:
        names = ds.names()
        listed = tool_json(tools["pheap"], "ls", "--json", ds_path)
    assert names["fa"] == "float" and names["pair"].startswith("std::pair<int, int")
    assert names["dv"].startswith("boost::container::vector<double")
    assert names == {o["name"]: o["type"] for o in listed["objects"] if o["kind"] == "named"}
    assert "dv" in pheap.open(ds_path, read_only=True)


def test_errors_name_the_datastore_and_the_cause(tmp_path):
    missing = str(tmp_path / "missing")
    with pytest.raises(pheap.NotFoundError) as e:
        pheap.open(missing)
    assert missing in str(e.value) and isinstance(e.value, FileNotFoundError)
    assert e.value.code == "not_found" and e.value.path == missing

    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(pheap.NotADatastoreError) as e:
        pheap.open(str(foreign), read_only=True)
    assert str(foreign) in str(e.value)
    with pytest.raises(pheap.NotADatastoreError):
        pheap.remove(str(foreign))
    assert (foreign / "notes.txt").read_text() == "mine"

    with pytest.raises(pheap.ExistsError):
        pheap.create(str(foreign))
    with pytest.raises(pheap.InvalidArgumentError) as e:
        pheap.create(str(tmp_path / "x"), capacity=1 << 30, colour="red")
    assert "colour" in str(e.value)
    with pytest.raises(pheap.InvalidArgumentError):
        pheap.create(str(tmp_path / "y"), capacity=1 << 30, chunk_size=3)


def test_read_only_datastores_refuse_writes_and_give_unwritable_views(ds_path):
    with pheap.create(ds_path, capacity=1 << 30) as ds:
        ds.create_array("a", (4, 4), "float32")[:] = 1.5
        ds.create_vector("v", "int64", data=[1, 2])
    with pheap.open(ds_path, read_only=True) as ds:
        a = ds.array("a")
        assert a.shape == (4, 4) and not a.flags.writeable and float(a.sum()) == 24.0
        with pytest.raises(ValueError):
            a[0, 0] = 2
        with pytest.raises(ValueError):
            a.flags.writeable = True
        for call in (lambda: ds.flush(), lambda: ds.create_array("b", 3), lambda: ds.destroy("a"),
                     lambda: ds.vector("v").append(3)):
            with pytest.raises(pheap.ReadOnlyError) as e:
                call()
            assert ds_path in str(e.value)
        del a


def test_a_snapshot_is_an_independent_datastore_at_its_watermark(ds_path, tmp_path):
    dst = str(tmp_path / "snap")
    with pheap.create(ds_path, capacity=1 << 30) as ds:
        a = ds.create_array("a", 8, "int64")
        a[:] = 1
        e = ds.snapshot(dst)
        a[:] = 2
        del a
    with pheap.open(dst, read_only=True) as s:
        assert s.epoch == e and np.all(s.array("a") == 1)
    with pheap.open(ds_path, read_only=True) as ds:
        assert np.all(ds.array("a") == 2)
    pheap.remove(dst)
    assert not os.path.exists(dst) and not pheap.consistent(dst)
