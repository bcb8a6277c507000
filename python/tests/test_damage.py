"""A damaged page is pheap.CorruptError naming the segment file and the page, never SIGBUS."""

import os

import numpy as np
import pytest

import pheap


def damage_block_of(path, fill):
    """Flips a bit in the first 4 KiB block of a segment file made only of `fill`."""
    block = bytes([fill]) * 4096
    for name in sorted(os.listdir(path)):
        if not name.startswith("segment-"):
            continue
        seg = os.path.join(path, name)
        with open(seg, "r+b") as f:
            data = f.read()
            at = 0
            while (at := data.find(block, at)) != -1:
                if at % 4096 == 0:
                    f.seek(at + 1000)
                    f.write(bytes([fill ^ 1]))
                    return seg
                at += 1
    return None


def test_a_view_of_a_damaged_page_raises_corrupt_error_naming_the_file_and_page(ds_path):
    with pheap.create(ds_path, capacity=1 << 30, page_size=4096) as ds:
        ds.create_array("blob", 256 * 1024, "uint8")[:] = 0x5A
        ds.flush()
        ds.flush()  # the pages are in the segment files
    seg = damage_block_of(ds_path, 0x5A)
    assert seg is not None
    with pheap.open(ds_path, read_only=True) as ds:
        with pytest.raises(pheap.CorruptError) as e:
            ds.array("blob")
        msg = str(e.value)
        assert os.path.basename(seg) in msg and "page" in msg
        assert isinstance(e.value, pheap.Error) and e.value.code == "corrupt"
        assert ds.names() == {"blob": "unsigned char"}  # the handle goes on


def test_a_damaged_neighbour_list_raises_corrupt_error_from_graph_reads(tmp_path):
    path = str(tmp_path / "g")
    hub = 0x4141414141414141  # a vertex id of one byte value: its arcs fill pages with it
    with pheap.graph.create(path, directed=True, buffer_size=8 << 20) as g:
        n = 100_000
        g.add_edges(np.arange(n, dtype=np.uint64) % 3, np.full(n, hub, dtype=np.uint64))
    seg = damage_block_of(path, 0x41)
    assert seg is not None
    with pheap.graph.open(path, buffer_size=8 << 20) as g:
        with pytest.raises(pheap.CorruptError) as e:
            for u in (0, 1, 2):
                g.neighbors(u)
        assert os.path.basename(seg) in str(e.value)
        with pytest.raises(pheap.CorruptError):
            g.components()
