// The crash hooks of the MPI jobs the mpi tests run (mpi_job.cpp, and pheap-graph rebuilt with
// graph_tool_hooks.cpp), set from the environment:
//   PHEAP_TEST_MPI_CRASH=STEP:RANK:EPOCH  rank RANK raises SIGKILL at step STEP (begin,
//                                         prepared, committed, confirmed) of the collective
//                                         flush that makes global epoch EPOCH (step_hook.hpp)
//   PHEAP_TEST_MPI_FLUSH_PAUSE_US=N       every rank sleeps N µs at the start of each flush
//   PHEAP_TEST_MPI_PIDS=DIR               each rank writes its pid to DIR/RANK (kills from outside)
#pragma once

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "mpi/step_hook.hpp"

namespace pheap::test::mpi_hooks {

using pheap::mpi::detail::flush_step;

inline const char* step_name(flush_step s) {
  switch (s) {
    case flush_step::begin: return "begin";
    case flush_step::prepared: return "prepared";
    case flush_step::committed: return "committed";
    case flush_step::confirmed: return "confirmed";
  }
  return "?";
}

inline std::string crash_step;
inline int crash_rank = -1;
inline std::uint64_t crash_epoch = 0;
inline long pause_us = 0;

inline void on_step(flush_step s, int rank, std::uint64_t epoch) {
  if (rank == crash_rank && epoch == crash_epoch && crash_step == step_name(s)) {
    std::fflush(nullptr);
    std::raise(SIGKILL);
  }
  if (s == flush_step::begin && pause_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(pause_us));
}

// Reads the variables above for rank `rank` and installs the step hook they ask for.
inline void install(int rank) {
  if (const char* c = std::getenv("PHEAP_TEST_MPI_CRASH"); c && *c) {
    const std::string v = c;
    const auto a = v.find(':'), b = v.find(':', a + 1);
    crash_step = v.substr(0, a);
    crash_rank = std::stoi(v.substr(a + 1, b - a - 1));
    crash_epoch = std::stoull(v.substr(b + 1));
  }
  if (const char* p = std::getenv("PHEAP_TEST_MPI_FLUSH_PAUSE_US"); p && *p) pause_us = std::atol(p);
  if (crash_rank >= 0 || pause_us > 0) pheap::mpi::detail::set_step_hook(&on_step);
  if (const char* d = std::getenv("PHEAP_TEST_MPI_PIDS"); d && *d) {
    std::ofstream(std::string(d) + "/" + std::to_string(rank)) << ::getpid() << "\n";
  }
}

}  // namespace pheap::test::mpi_hooks
