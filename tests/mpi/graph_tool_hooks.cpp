// Linked into pheap-graph-crashable (pheap-graph's own source, tests/mpi/CMakeLists.txt): the
// crash hooks of crash_hooks.hpp, installed before main from the rank mpirun gives the process
// (OMPI_COMM_WORLD_RANK), so the kill campaign of graph_mpi_test.cpp can stop a rank of the
// real tool inside the collective flush.
#include <cstdlib>

#include "crash_hooks.hpp"

namespace {

const bool installed = [] {
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (rank != nullptr) pheap::test::mpi_hooks::install(std::atoi(rank));
  return rank != nullptr;
}();

}  // namespace
