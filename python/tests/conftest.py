"""Fixtures of the pheap Python tests.

The tests drive the C++ tools as the Python package's peers: ``pheap``, ``pheap-graph`` and
``pheap-py-test-writer`` of the build named by PHEAP_BUILD_DIR (default: the tree's build/).
A missing tool is a failure, never a skip (scripts/test.sh builds them first).
"""

import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _build_dir():
    return pathlib.Path(os.environ.get("PHEAP_BUILD_DIR", ROOT / "build")).resolve()


@pytest.fixture(scope="session")
def tools():
    """Paths of the C++ programs: tools["pheap"], tools["pheap-graph"], tools["writer"]."""
    bin_dir = _build_dir() / "bin"
    found = {
        "pheap": bin_dir / "pheap",
        "pheap-graph": bin_dir / "pheap-graph",
        "writer": bin_dir / "pheap-py-test-writer",
    }
    missing = [str(p) for p in found.values() if not p.is_file()]
    if missing:
        pytest.fail("build the tree first (cmake --build build): missing " + ", ".join(missing))
    return {k: str(v) for k, v in found.items()}


def run(*args, **kw):
    """Runs a program; its CompletedProcess (text), failing the test on a non-zero exit."""
    p = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kw)
    assert p.returncode == 0, f"{args} exited {p.returncode}:\n{p.stdout}\n{p.stderr}"
    return p


def tool_json(*args):
    return json.loads(run(*args).stdout)


@pytest.fixture
def ds_path(tmp_path):
    """A path for a new datastore (under pytest's tmp_path, removed by pytest)."""
    return str(tmp_path / "ds")


@pytest.fixture(scope="session")
def small_graph(tools, tmp_path_factory):
    """An undirected R-MAT SCALE-10 graph ingested by pheap-graph: (datastore, edge file)."""
    d = tmp_path_factory.mktemp("graph")
    edges = d / "edges.txt"
    run(tools["pheap-graph"], "generate", "--scale", "10", "--output", edges, "-q")
    ds = d / "g"
    run(tools["pheap-graph"], "ingest", "--datastore", ds, "--undirected", "-q", edges)
    return str(ds), str(edges)
