// pheap/graph/mpi/ingest.hpp — exactly-once, resumable ingestion of edge lists into a graph
// partitioned over the ranks of a distributed datastore (pheap/mpi/datastore.hpp), under MPI.
//
//   pheap::mpi::datastore ds = pheap::graph::mpi::open_or_create(MPI_COMM_WORLD, "/data/g", "graph", spec);
//   auto r = pheap::graph::mpi::ingest(MPI_COMM_WORLD, ds, "graph", spec, {"a.txt"}, opt);  // collective
//
// Every rank reads its byte range of each input (partition.hpp), routes each edge to the
// owner of its source (and, undirected, the reverse arc to the owner of its target; directed,
// the target's vertex to its owner) with one MPI_Alltoallv per batch, and inserts what it
// receives into its own graph. The protocol is the single-process one (pheap/graph/ingest.hpp)
// with the flush made collective (graph/mpi/FORMAT.md):
//     read batch -> exchange -> insert -> record position -> agree (one MPI_Allreduce)
//     -> every flush_every, all ranks at the same batch: datastore::flush() (one global watermark)
// Each rank's position lives in its heap, so one global watermark holds, for every rank, the
// edges and the position of the same batch: a rerun of the same command with the same rank
// count resumes every rank exactly there — no edge lost, none duplicated.
//
// Options are those of pheap::graph::ingest_options, with: batch_size = edges each rank reads
// per batch; flush_every_edges counts the edges of all ranks; flush_every_seconds is due when
// it is due on any rank; threads is ignored (a rank inserts on its own thread: the ranks are
// the parallelism). Job identity (fingerprint, --reingest, --abandon-incomplete) is the
// single-process one, decided on every rank from its own record, which the global watermark
// keeps equal (a disagreement is errc::corrupt).
//
// Errors: the same types as ingest(), on every rank. A malformed line on one rank stops every
// rank after the batch it ended: the edges before it are flushed (every rank), then that rank
// throws the input_error and the others rank_failed naming it. Errors raised while starting
// (job or graph mismatch, a bad input) are agreed likewise: the lowest failing rank throws
// its own, the others rank_failed. Later failures (I/O) throw on the failing rank only
// and the job must abort (MPI_Abort or a non-zero exit under mpirun): the datastore keeps its
// last global watermark, and the caller must not flush.
//
// Caveats:
//   * With more than one rank the inputs must be plain files (partition.hpp). Line numbers in
//     a malformed-line message count from the start of the rank's range; the byte offset is
//     the input's.
//   * Collective on `comm`, which must be the communicator `ds` was opened with.
#pragma once

#include <mpi.h>

#include <pheap/graph/ingest.hpp>
#include <pheap/graph/mpi/partition.hpp>
#include <pheap/graph/store.hpp>
#include <pheap/mpi/datastore.hpp>

#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace pheap::graph::mpi {

// Thrown on every rank but one when a collective step failed: the lowest failing rank throws
// its own exception (and reports it), the others this, naming that rank and the kind of its
// failure, so a tool reports it once and every rank leaves with the same exit status.
class rank_failed : public std::runtime_error {
 public:
  enum kind_t { usage, input, other };  // ingest_usage_error / input_error / anything else
  rank_failed(int rank, kind_t kind);
  int rank() const noexcept { return rank_; }
  kind_t kind() const noexcept { return kind_; }

 private:
  int rank_;
  kind_t kind_;
};

// How a new graph is made (every rank the same).
struct graph_spec {
  bool directed = true;
  weight_kind weights = weight_kind::none;
  std::size_t banks = 1024;
};

// Collective. Opens the distributed datastore at `path` read-write, or creates it with an
// empty graph `name` on every rank when `path` does not exist: built under a temporary sibling
// name and renamed into place once its first global watermark holds the graph, so a creation
// cut short by a kill leaves nothing that a rerun would mistake for a datastore. Throws
// (agreed) ingest_usage_error when `path` is a datastore that is not distributed (no
// pheap.manifest), and the errors of pheap::mpi::datastore (a different rank count, ...).
pheap::mpi::datastore open_or_create(MPI_Comm comm, const std::string& path, const std::string& name,
                                     const graph_spec& spec, const pheap::options& opt = pheap::options::from_env());

// The totals of a distributed ingestion (every rank gets the same).
struct distributed_report {
  ingest_report job;                  // as ingest() reports it; final.* summed over the ranks
  std::uint64_t ranks = 0;
  std::uint64_t batches = 0;          // exchange rounds this run
  std::uint64_t records_exchanged = 0;  // records sent to other ranks this run (all ranks)
  std::uint64_t bytes_exchanged = 0;    // their bytes, plus the per-batch counts and agreement
};

// Collective. Runs (or resumes) the job `inputs` into graph `name` of `ds` (made as `spec`
// says when the datastore has none; a different directedness or weight kind is
// pheap::error(invalid_argument), agreed). `progress` (may be empty) is called on every rank
// after every batch with the totals of all ranks.
distributed_report ingest(MPI_Comm comm, pheap::mpi::datastore& ds, const std::string& name, const graph_spec& spec,
                          const std::vector<std::string>& inputs, const ingest_options& opt,
                          const std::function<void(const ingest_progress&)>& progress = {});

}  // namespace pheap::graph::mpi
