// flush_bench: the collective flush (pheap::mpi, src/mpi/FORMAT.md) against a local
// manager::flush of the same dirty volume, per rank count.
//
//   mpirun -np N build/bench/mpi/mpi_flush_bench DIR [ROUNDS=30] [PAGES=64]
//
// Every rank owns a distributed datastore's rank and, beside it, a plain datastore with the same
// geometry. Each round dirties PAGES pages (64 KiB: one word each, so the flush writes whole
// pages) in both heaps, then times manager::flush() on the plain one and datastore::flush()
// on the distributed one. A round's time is the slowest rank's (MPI_MAX). Rank 0 prints the
// median and the 90th percentile of each, and the difference: the price of the global
// watermark (prepare + gather + manifest write and fdatasync + broadcast + confirm).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "pheap/mpi/datastore.hpp"

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double slowest(double ms) {
  double m = 0;
  MPI_Allreduce(&ms, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}

double pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR [ROUNDS] [PAGES]\n", argv[0]);
    MPI_Finalize();
    return 2;
  }
  const std::string dir = argv[1];
  const int rounds = argc > 2 ? std::stoi(argv[2]) : 30;
  const std::size_t pages = argc > 3 ? std::stoul(argv[3]) : 64;
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  pheap::options o = pheap::options::from_env();
  o.capacity = 1ull << 30;
  o.page_size = 64 * 1024;
  const std::size_t ps = o.page_size;
  std::vector<double> local_ms, global_ms;
  {
    pheap::mpi::datastore ds(pheap::create_only, MPI_COMM_WORLD, dir + "/distributed", o);
    pheap::manager plain(pheap::create_only, dir + "/plain-" + std::to_string(rank), o);
    auto* a = static_cast<std::byte*>(plain.allocate_aligned(pages * ps, 4096));
    auto* b = static_cast<std::byte*>(ds.local().allocate_aligned(pages * ps, 4096));
    plain.flush();
    ds.flush();
    for (int r = 0; r < rounds; ++r) {
      for (std::size_t p = 0; p < pages; ++p) {
        a[p * ps] = std::byte(r + 1);
        b[p * ps] = std::byte(r + 1);
      }
      MPI_Barrier(MPI_COMM_WORLD);
      double t = now_ms();
      plain.flush();
      local_ms.push_back(slowest(now_ms() - t));
      MPI_Barrier(MPI_COMM_WORLD);
      t = now_ms();
      ds.flush();
      global_ms.push_back(slowest(now_ms() - t));
    }
  }
  if (rank == 0) {
    std::printf("ranks=%d pages=%zu (%zu KiB/rank) rounds=%d  local flush: median %.2f ms p90 %.2f ms  "
                "collective flush: median %.2f ms p90 %.2f ms  overhead median %.2f ms\n",
                size, pages, pages * ps / 1024, rounds, pct(local_ms, 0.5), pct(local_ms, 0.9),
                pct(global_ms, 0.5), pct(global_ms, 0.9), pct(global_ms, 0.5) - pct(local_ms, 0.5));
  }
  MPI_Finalize();
  return 0;
}
