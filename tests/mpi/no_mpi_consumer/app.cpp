// A graph in a new datastore, reopened read-only; prints "installed graph <vertices> <arcs>".
#include <pheap/graph/store.hpp>

#include <cstdio>
#include <string>

int main(int, char** argv) {
  const std::string dir = argv[1];
  pheap::options o = pheap::graph::datastore_options();
  o.capacity = 64ull << 20;
  {
    pheap::manager m(pheap::create_only, dir, o);
    auto& g = pheap::graph::open_or_create_graph<void>(m, "graph", true);
    g.insert({1, 2, 0});
    g.insert({2, 3, 0});
    m.flush();
  }
  pheap::manager m(pheap::open_read_only, dir);
  pheap::graph::visit_graph(m, "graph", [](const auto& g) {
    std::printf("installed graph %llu %llu\n", static_cast<unsigned long long>(g.num_vertices()),
                static_cast<unsigned long long>(g.num_arcs()));
  });
  return 0;
}
