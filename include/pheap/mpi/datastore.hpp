// pheap/mpi/datastore.hpp — a distributed datastore for MPI programs: a pheap datastore per
// rank and one global watermark (target pheap::mpi; built when CMake finds MPI).
//
//   pheap::mpi::datastore ds(pheap::create_only, MPI_COMM_WORLD, "/data/job");  // collective
//   auto* v = ds.local().construct<vec_t>("edges")(ds.local().get_allocator<>());
//   v->push_back(42);                       // this rank's heap, as with pheap::manager
//   std::uint64_t g = ds.flush();           // collective: one watermark for the whole job
//   // ... after a crash of any rank, or of the job, in a new job of the same size:
//   pheap::mpi::datastore r(pheap::open_only, MPI_COMM_WORLD, "/data/job");  // at global epoch g
//
// Durability: flush() is a two-phase commit (src/mpi/FORMAT.md): every rank prepares its
// writes as a local epoch, rank 0 writes the manifest naming every rank's epoch (the commit
// point), then every rank confirms. An open puts every rank at the manifest's global epoch: a
// rank that had prepared or confirmed a later epoch than the manifest records discards it.
//
// Collective calls (every rank of the communicator, in the same order): the constructors,
// flush(), snapshot(), remove(). An error on any rank makes the call throw on every rank
// (never a hang): the failing rank its own pheap::error, the others one with the same code
// naming that rank.
//
// Caveats:
//   * local() is a participant manager (pheap/two_phase.hpp): local().flush() throws, and
//     the destructor commits NOTHING: call flush() before destroying, or writes since the
//     last flush() are lost (as after a crash). The destructor is not collective.
//   * A flush() that throws (on any rank) leaves the job at the previous global epoch and
//     this object unusable (errc::poisoned on the next flush): destroy it and open again.
//   * Opening needs a communicator of the size the datastore was created with
//     (errc::invalid_argument otherwise); rank r opens rank-r's datastore.
//   * Between the prepare and the confirm inside flush(), another thread's write to a page
//     the prepared epoch changed may wait (pheap/two_phase.hpp); flush() confirms promptly.
//   * The object keeps a duplicate of the communicator: destroy it before MPI_Finalize.
//   * uffd backend only (errc::unavailable for options::backend = mmap).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>

#include "pheap/manager.hpp"
#include "pheap/mpi/manifest.hpp"

namespace pheap::mpi {

class datastore {
 public:
  // Creates the directory `path` (must not exist, or be empty), a datastore per rank and the
  // manifest at global epoch 1. A creation cut short leaves no manifest: not a datastore.
  datastore(create_only_t, MPI_Comm comm, const std::string& path, const options& opt = options::from_env());
  // Opens every rank at the manifest's global epoch, read-write (exclusive per rank).
  datastore(open_only_t, MPI_Comm comm, const std::string& path, const options& opt = options::from_env());
  // Opens every rank read-only at the manifest's global epoch; flush() throws read_only. May
  // run beside a job that keeps flushing: every rank lands on one global watermark and keeps
  // it until destroyed (FORMAT.md "Readers beside a running job"; a flush that overtakes the
  // open sends every rank to the newer one).
  datastore(open_read_only_t, MPI_Comm comm, const std::string& path, const options& opt = options::from_env());
  ~datastore();
  datastore(const datastore&) = delete;
  datastore& operator=(const datastore&) = delete;

  manager& local() noexcept;  // this rank's heap
  int rank() const noexcept;
  int size() const noexcept;
  const std::string& path() const noexcept;
  std::uint64_t epoch() const noexcept;  // the last committed global epoch

  // Collective: everything every rank wrote before the call becomes durable as one global
  // epoch, which it returns.
  std::uint64_t flush();
  // Collective: flushes (read-write), then writes an independent distributed datastore at
  // `dst` (must not exist) holding that global epoch: every rank's datastore and a manifest
  // with a new job uuid. Returns the global epoch.
  std::uint64_t snapshot(const std::string& dst);
  // Collective, on a communicator of any size: deletes the distributed datastore at `path`
  // (the manifest first, so that a remove cut short leaves no datastore that opens).
  static void remove(MPI_Comm comm, const std::string& path);

  struct state;

 private:
  std::unique_ptr<state> s_;
};

}  // namespace pheap::mpi
