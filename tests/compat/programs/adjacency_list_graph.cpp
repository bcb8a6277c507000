// Metall's adjacency list: a user template over the manager's allocator (an unordered_map of
// vectors with a scoped adaptor), extended after a read-write reopen.
#include <cstdint>
#include <iostream>

#include <metall/metall.hpp>

#include "graph/adjacency_list.hpp"

using graph_t = adjacency_list<std::uint64_t, metall::manager::allocator_type<char>>;

int main() {
  {
    metall::manager manager(metall::create_only, "datastore");
    graph_t* g = manager.construct<graph_t>("adjacency")(manager.get_allocator());
    g->add_edge(5, 6);
  }
  metall::manager manager(metall::open_only, "datastore");
  graph_t* g = manager.find<graph_t>("adjacency").first;
  g->add_edge(5, 7);
  g->add_edge(6, 5);
  for (auto e = g->edges_begin(5); e != g->edges_end(5); ++e) std::cout << "5 " << *e << std::endl;
  return 0;
}
