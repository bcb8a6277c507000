# %% [markdown]
# # The degree distribution of a persistent graph
#
# A graph that `pheap-graph ingest` built, opened from Python: no export, no parsing. The
# cells below (`# %%`, as Jupyter and VS Code read them) run as a script too:
#
#     pheap-graph generate --scale 16 --output edges.txt
#     pheap-graph ingest --datastore /tmp/g16 --undirected edges.txt
#     python examples/python/degree_distribution.py /tmp/g16 degrees.png
#
# Needs the package (`pip install ./python`) and matplotlib.

# %%
import sys
import time

import matplotlib

matplotlib.use("Agg")  # a file, no display
import matplotlib.pyplot as plt
import numpy as np

import pheap

path = sys.argv[1] if len(sys.argv) > 1 else "/tmp/g16"
out = sys.argv[2] if len(sys.argv) > 2 else "degrees.png"

# %% Open at the last watermark and take the degrees: one array, aligned with vertices().
t0 = time.perf_counter()
g = pheap.graph.open(path)  # read-only: other readers may open it too
ids, deg = g.vertices(), g.degrees()
took = time.perf_counter() - t0
print(f"{path}: {g.num_vertices} vertices, {g.num_arcs} arcs at watermark {g.watermark}; "
      f"degrees in {took * 1000:.1f} ms")

# %% The distribution: how many vertices have each degree, on log-log axes.
values, counts = np.unique(deg, return_counts=True)
positive = values > 0
fig, ax = plt.subplots(figsize=(6, 4.5))
ax.loglog(values[positive], counts[positive], ".", markersize=4)
ax.set_xlabel("out-degree")
ax.set_ylabel("vertices")
ax.set_title(f"{g.name}: {g.num_vertices:,} vertices, {g.num_arcs:,} arcs")
ax.grid(True, which="both", alpha=0.3)
fig.tight_layout()
fig.savefig(out, dpi=120)
print(f"max degree {int(deg.max())} (vertex {int(ids[deg.argmax()])}); plot written to {out}")

# %% The busiest vertex's neighbours are a view into the heap, not a copy.
hub = int(ids[deg.argmax()])
nb = g.neighbors(hub) if g.weights == "none" else g.neighbors(hub)[0]
print(f"vertex {hub}: first neighbours {nb[:8].tolist()}")
del nb
g.close()
