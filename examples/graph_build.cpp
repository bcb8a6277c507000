// Example 1 of 3 — build a graph in one job.
//
//   ./example_graph_build /tmp/my-graph        (then example_graph_extend, example_graph_query)
//
// Creates a datastore, puts an undirected adjacency list in it under the name "graph", adds a
// few edges and makes them durable with flush(). The process can then exit (or crash): the
// next job finds the same graph by name.
#include <pheap/graph/store.hpp>

#include <cstdio>
#include <filesystem>

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "/tmp/pheap-example-graph";
  std::filesystem::remove_all(path);  // start from scratch each time this example runs

  pheap::options opt = pheap::options::from_env();  // the PHEAP_* variables, then our own choices
  opt.capacity = 1ull << 30;  // 1 GiB of address space; untouched parts cost nothing
  pheap::manager m(pheap::create_only, path, opt);

  // Finds "graph" or creates it (with its metadata) — unweighted (void), undirected.
  auto& g = pheap::graph::open_or_create_graph<void>(m, "graph", /*directed=*/false);
  g.insert(1, 2);
  g.insert(2, 3);
  g.insert(3, 1);

  // Everything written so far becomes durable atomically; returns the watermark number.
  const auto epoch = m.flush();
  std::printf("built %s: %llu vertices, %llu arcs, watermark %llu\n", path.c_str(),
              static_cast<unsigned long long>(g.num_vertices()),
              static_cast<unsigned long long>(g.num_arcs()), static_cast<unsigned long long>(epoch));
  return 0;  // the manager's destructor flushes again and closes
}
