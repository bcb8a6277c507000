// Metall's CSR graph: a user class allocating its arrays through a rebound manager allocator,
// filled in one run and read through raw pointers in a read-only run.
#include <cstdint>
#include <cstdlib>
#include <iostream>

#include <metall/metall.hpp>

#include "graph/csr.hpp"

using graph_t = csr_graph<std::uint64_t, std::uint64_t, metall::manager::allocator_type<char>>;

int main() {
  {
    metall::manager manager(metall::create_only, "datastore");
    graph_t* g = manager.construct<graph_t>("csr")(4, 3, manager.get_allocator());
    std::uint64_t* offsets = g->offsets();
    std::uint64_t* targets = g->targets();
    // vertex 0 -> 1, 2; vertex 2 -> 3
    targets[0] = 1;
    targets[1] = 2;
    targets[2] = 3;
    offsets[1] = 2;
    offsets[2] = 2;
    offsets[3] = 3;
    offsets[4] = 3;
  }
  metall::manager manager(metall::open_read_only, "datastore");
  graph_t* g = manager.find<graph_t>("csr").first;
  if (g == nullptr) {
    std::cerr << "no csr graph" << std::endl;
    std::abort();
  }
  for (std::uint64_t v = 0; v < 4; ++v) {
    for (std::uint64_t e = g->offsets()[v]; e < g->offsets()[v + 1]; ++e) {
      std::cout << v << " -> " << g->targets()[e] << std::endl;
    }
  }
  return 0;
}
