"""Persistent arrays and vectors as zero-copy NumPy views."""

import numpy as np
import pytest

import pheap
from conftest import run


def test_a_view_is_the_heaps_memory_not_a_copy(ds_path):
    with pheap.create(ds_path, capacity=1 << 30) as ds:
        a = ds.create_array("a", (100, 3), "float64")
        assert np.all(a == 0) and a.dtype == np.float64 and a.flags.writeable
        b = ds.array("a")
        assert np.shares_memory(a, b)
        a[5, 1] = 3.5
        assert b[5, 1] == 3.5  # one memory
        del a, b


def test_every_numpy_type_round_trips_with_its_shape(ds_path):
    types = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
             "float32", "float64"]
    with pheap.create(ds_path, capacity=1 << 30) as ds:
        for t in types:
            a = ds.create_array("x_" + t, (2, 3, 4), t)
            a[...] = (np.arange(24).reshape(2, 3, 4) % 2 == 1) if t == "bool" else np.arange(24).reshape(2, 3, 4)
            del a
    with pheap.open(ds_path, read_only=True) as ds:
        for t in types:
            a = ds.array("x_" + t)
            want = np.arange(24).reshape(2, 3, 4)
            want = want % 2 == 1 if t == "bool" else want.astype(t)
            assert a.dtype == np.dtype(t) and a.shape == (2, 3, 4) and np.array_equal(a, want), t
            del a
    with pytest.raises(pheap.TypeMismatchError) as e:
        with pheap.create(ds_path + "2", capacity=1 << 30) as ds:
            ds.create_array("c", 4, "complex128")
    assert "complex128" in str(e.value)


def test_vectors_a_cpp_program_made_open_with_the_dtype_of_their_recorded_type(ds_path, tools):
    run(tools["writer"], "vectors", ds_path)
    with pheap.open(ds_path, read_only=True) as ds:
        dv, iv, uv, fa = ds.array("dv"), ds.array("iv"), ds.array("uv"), ds.array("fa")
        assert dv.dtype == np.float64 and np.array_equal(dv, np.arange(100) * 0.5)
        assert iv.dtype == np.int32 and np.array_equal(iv, -np.arange(1, 11))
        assert uv.dtype == np.uint64 and np.array_equal(uv, np.arange(1000))
        assert fa.dtype == np.float32 and np.all(fa == 0.25)
        assert len(ds.vector("uv")) == 1000 and ds.vector("dv").dtype == np.float64
        with pytest.raises(TypeError) as e:
            ds.array("pair")
        assert "pair" in str(e.value) and "std::pair<int, int>" in str(e.value)
        assert isinstance(e.value, pheap.TypeMismatchError)
        with pytest.raises(pheap.TypeMismatchError) as e:
            ds.vector("fa")  # an array, not a vector
        assert "fa" in str(e.value)
        del dv, iv, uv, fa


def test_a_vector_grows_with_append_and_extend_and_survives_a_reopen(ds_path):
    with pheap.create(ds_path, capacity=1 << 30) as ds:
        v = ds.create_vector("v", "int64", data=[1, 2, 3])
        v.append(4)
        v.extend(np.arange(5, 1001))
        assert len(v) == 1000 and np.array_equal(v.view(), np.arange(1, 1001))
        assert np.array_equal(np.asarray(v), np.arange(1, 1001))
    with pheap.open(ds_path) as ds:
        v = ds.vector("v")
        assert np.array_equal(v.view(), np.arange(1, 1001))
        v.extend([1001.0, 1002.0])  # converted to the vector's dtype
        assert v.view()[-1] == 1002


def test_growing_a_vector_or_destroying_an_object_under_a_live_view_is_refused(ds_path):
    with pheap.create(ds_path, capacity=1 << 30) as ds:
        v = ds.create_vector("v", "float64")
        v.reserve(4)
        v.extend([1, 2])
        view = v.view()
        v.extend([3, 4])  # within the capacity: the view's elements do not move
        with pytest.raises(BufferError) as e:
            v.extend(np.arange(100))
        assert "view" in str(e.value)
        assert len(v) == 4 and np.array_equal(view, [1, 2])
        with pytest.raises(BufferError):
            ds.destroy("v")
        del view
        v.extend(np.arange(100))
        assert len(v) == 104
        ds.destroy("v")
        assert "v" not in ds
        with pytest.raises(pheap.NotFoundError):
            len(v)
        a = ds.create_array("a", 10, "int8")
        with pytest.raises(BufferError):
            ds.destroy("a")
        del a
        ds.destroy("a")
        with pytest.raises(pheap.ExistsError):
            ds.create_array("b", 1)
            ds.create_array("b", 1)


def test_byte_arrays_of_the_c_api_are_uint8_views(ds_path):
    # pheap_named_malloc (and Metall's C API) make `unsigned char` arrays: the same dtype
    # create_array("uint8") makes, so both directions open.
    with pheap.create(ds_path, capacity=1 << 30) as ds:
        ds.create_array("bytes", 16, "uint8")[:] = np.arange(16)
    with pheap.open(ds_path, read_only=True) as ds:
        assert ds.names()["bytes"] == "unsigned char"
        assert np.array_equal(ds.array("bytes"), np.arange(16))
