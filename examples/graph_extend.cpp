// Example 2 of 3 — extend the graph built by example_graph_build, in a second job.
//
//   ./example_graph_extend /tmp/my-graph
//
// Reopens the datastore read-write, finds the same graph object by name and appends edges
// from several threads. Writers share a DRAM lock table (bank_locks); the locks are not stored
// in the datastore.
#include <pheap/graph/store.hpp>

#include <cstdio>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "/tmp/pheap-example-graph";
  pheap::manager m(pheap::open_only, path);

  // Same call as in the first job: this time it finds the existing graph (and checks that it
  // is still undirected and unweighted).
  auto& g = pheap::graph::open_or_create_graph<void>(m, "graph", /*directed=*/false);
  const auto before = g.num_arcs();

  pheap::graph::bank_locks locks(g.num_banks());
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < 2; ++t) {
    workers.emplace_back([&, t] {
      for (std::uint64_t i = 0; i < 1000; ++i) g.insert(100 + t, 1000 + i, 0, &locks);
    });
  }
  for (auto& w : workers) w.join();

  m.flush();  // both threads' edges, one atomic watermark
  std::printf("extended %s: %llu -> %llu arcs\n", path.c_str(), static_cast<unsigned long long>(before),
              static_cast<unsigned long long>(g.num_arcs()));
  return 0;
}
