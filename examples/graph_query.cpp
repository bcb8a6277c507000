// Example 3 of 3 — query the graph read-only, in a third job.
//
//   ./example_graph_query /tmp/my-graph
//
// A read-only open never writes to the datastore and may run in several processes at once.
// visit_graph() hands the graph to the lambda with its concrete type (unweighted, u64 or f32
// weights), so the same code works for any graph the pheap-graph tool ingested.
#include <pheap/graph/algorithms.hpp>
#include <pheap/graph/store.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "/tmp/pheap-example-graph";
  pheap::manager m(pheap::open_read_only, path);

  pheap::graph::visit_graph(m, "graph", [](const auto& g) {
    const auto c = pheap::graph::count(g);
    std::printf("%llu vertices, %llu arcs, max degree %llu\n", static_cast<unsigned long long>(c.vertices),
                static_cast<unsigned long long>(c.arcs), static_cast<unsigned long long>(c.max_degree));

    const auto bfs = pheap::graph::bfs(g, 1);  // levels and parents, in DRAM
    std::printf("bfs from 1 reaches %llu vertices, max level %llu\n",
                static_cast<unsigned long long>(bfs.reached), static_cast<unsigned long long>(bfs.max_level));

    const auto cc = pheap::graph::connected_components(g);
    std::printf("%llu connected component(s), largest has %llu vertices\n",
                static_cast<unsigned long long>(cc.components), static_cast<unsigned long long>(cc.largest));
  });
  return 0;
}
