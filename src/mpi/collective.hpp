// src/mpi/collective.hpp — agreement among ranks: a step that failed on one rank fails on
// every rank, with the same error code, instead of leaving the others waiting (internal).
#pragma once

#include <mpi.h>

#include <exception>
#include <string>

namespace pheap::mpi::detail {

// Collective. Returns on every rank iff `mine` is null on every rank. Otherwise every rank
// throws: a rank that failed rethrows its own exception, the others throw a pheap::error with
// the code of the lowest failing rank, naming it and quoting its message. One MPI_Allreduce,
// plus one MPI_Bcast when something failed.
void agree(MPI_Comm comm, std::exception_ptr mine, const std::string& path, const std::string& op);

// Runs fn on this rank, then agree()s on the outcome.
template <class F>
void on_all(MPI_Comm comm, const std::string& path, const std::string& op, F&& fn) {
  std::exception_ptr failure;
  try {
    fn();
  } catch (...) {
    failure = std::current_exception();
  }
  agree(comm, failure, path, op);
}

}  // namespace pheap::mpi::detail
