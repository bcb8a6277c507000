// One MPI process (singleton MPI_Init, no mpirun): create a distributed datastore of one rank,
// write, flush collectively, reopen; prints "installed mpi <global epoch> <value>".
#include <mpi.h>

#include <cstdio>

#include "pheap/mpi/datastore.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const std::string dir = argv[1];
  pheap::options o;
  o.capacity = 64ull << 20;
  {
    pheap::mpi::datastore ds(pheap::create_only, MPI_COMM_WORLD, dir, o);
    *ds.local().construct<int>("answer")() = 42;
    ds.flush();
  }
  {
    pheap::mpi::datastore ds(pheap::open_read_only, MPI_COMM_WORLD, dir, o);
    std::printf("installed mpi %llu %d\n", static_cast<unsigned long long>(ds.epoch()),
                *ds.local().find<int>("answer").first);
  }
  MPI_Finalize();
  return 0;
}
