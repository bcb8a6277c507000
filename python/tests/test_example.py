"""The example of examples/python runs on a graph the tool made and writes its plot."""

import pathlib
import sys

from conftest import ROOT, run


def test_the_degree_distribution_example_plots_a_tool_made_graph(small_graph, tmp_path):
    ds, _ = small_graph
    png = tmp_path / "degrees.png"
    out = run(sys.executable, ROOT / "examples" / "python" / "degree_distribution.py", ds, png).stdout
    assert "vertices" in out and "plot written to" in out
    data = pathlib.Path(png).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
