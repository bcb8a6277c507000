// mpi_counter: each rank of an MPI job keeps its own persistent vector, and the whole job
// commits one global watermark with a collective flush (pheap::mpi, src/mpi/FORMAT.md).
//
//   mpirun -np 4 example_mpi_counter /data/counter 10   # creates, or resumes after a crash
//
// Every round each rank appends one number and the job flushes. Kill any rank (or the job)
// and run the same command again: every rank resumes at the same round, the last one the job
// committed as a whole — never one rank ahead of another.
#include <mpi.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "pheap/container.hpp"
#include "pheap/mpi/datastore.hpp"

using numbers = pheap::container::vector<std::uint64_t>;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s DIR ROUNDS\n", argv[0]);
    MPI_Finalize();
    return 2;
  }
  const std::string dir = argv[1];
  const unsigned long rounds = std::stoul(argv[2]);
  int rc = 0;
  try {
    pheap::options opt = pheap::options::from_env();  // the PHEAP_* variables, then our own choices
    opt.capacity = 1ull << 30;
    // Collective: every rank takes the same branch (they all see the same directory).
    const bool exists = std::filesystem::exists(dir + "/" + pheap::mpi::manifest_file);
    pheap::mpi::datastore ds = exists ? pheap::mpi::datastore(pheap::open_only, MPI_COMM_WORLD, dir, opt)
                                      : pheap::mpi::datastore(pheap::create_only, MPI_COMM_WORLD, dir, opt);
    auto& heap = ds.local();
    numbers* v = heap.find_or_construct<numbers>("numbers")(heap.get_allocator<>());
    std::printf("rank %d resumes at global epoch %llu with %zu numbers\n", ds.rank(),
                static_cast<unsigned long long>(ds.epoch()), v->size());
    while (v->size() < rounds) {
      v->push_back(v->size() * 100 + static_cast<std::uint64_t>(ds.rank()));
      ds.flush();  // collective: one global watermark
    }
  } catch (const pheap::error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    rc = 1;
  }
  MPI_Finalize();
  return rc;
}
