// pheap/mpi/manifest.hpp — a distributed datastore on disk: a datastore per rank and the global
// manifest that names one consistent combination of them. Needs no MPI (no <mpi.h>): a
// single process can read a distributed datastore with open_read_only().
//
//   D/pheap.manifest   the global watermark: two checksummed slots (src/mpi/FORMAT.md)
//   D/rank-00000/      rank 0's datastore (an ordinary pheap datastore)
//   D/rank-00001/      ...
//
// The manifest's global epoch G names, for every rank r, the local epoch of rank r's
// datastore that belongs to G. Opening rank r at that epoch (two_phase::open with max_epoch =
// the recorded epoch) gives every rank the same point of the job, whatever crashed when.
//
// Errors (pheap::error naming the path): no D or no manifest -> not_found (a manifest is
// written last at creation: a directory without one is an interrupted creation); a file that
// is not a pheap manifest -> not_a_datastore; both slots failing their checksum (torn) or
// impossible values -> corrupt; a newer manifest format -> newer_format; a missing rank
// directory -> not_found; a rank directory of another job (uuid differs from the manifest's)
// -> not_a_datastore.
//
// Caveats:
//   * The ordinary tools open a rank directory as a plain datastore at its own last commit,
//     which may be a local epoch the job never committed globally (a rank that confirmed
//     before another crashed is fine; a prepared epoch above the manifest's is ignored by
//     open_read_only here but would be taken by a plain open). Read a distributed datastore
//     through this header or pheap::mpi::datastore.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pheap/manager.hpp"
#include "pheap/sparse_store.hpp"

namespace pheap::mpi {

inline constexpr const char* manifest_file = "pheap.manifest";
inline constexpr std::uint32_t manifest_format = 1;

struct rank_entry {
  std::uint64_t epoch = 0;  // the rank datastore's local epoch for the global epoch
  uuid id{};                // the rank datastore's uuid
};

struct manifest {
  uuid job{};                     // this distributed datastore (a snapshot gets a new one)
  std::uint64_t epoch = 0;        // the global epoch (1 at creation)
  std::vector<rank_entry> ranks;  // one per rank, rank order
};

// "D/rank-00007".
std::string rank_dir(const std::string& path, int rank);
// The last committed global watermark of the distributed datastore at `path`.
// Through `engine` (null: io::default_engine()).
manifest read_manifest(const std::string& path, std::shared_ptr<io::engine> engine = nullptr);

// Every rank's datastore opened read-only at the global epoch, in one process (no MPI). Beside
// a running job too: every rank at one global watermark, kept until the view is destroyed;
// a flush that overtakes the open makes it start again at the newer one (src/mpi/FORMAT.md,
// "Readers beside a running job"; errc::stale after 1000 such restarts).
struct distributed_view {
  manifest man;
  std::vector<manager> ranks;  // rank order
  std::string path;            // the distributed datastore
  std::shared_ptr<io::engine> engine;  // options::engine of the open (null: the default)
};
distributed_view open_read_only(const std::string& path, const options& opt = options::from_env());

// Moves every rank of `v` to the newest global watermark without closing them, and returns
// that global epoch (v.man.epoch before the call: nothing new). Each rank is refreshed as a
// read-only manager is (manager::refresh: pages whose copy did not change stay in memory;
// re-find every object afterwards, every pointer into a rank's heap reads the new
// watermark's bytes). A job that confirms a newer global epoch while the ranks move makes
// the refresh move them to that one (errc::stale after 1000 such restarts). Caveats:
//   * Any other failure once a rank moved (an I/O error, a rank's pin released by its writer)
//     leaves the ranks at different global watermarks: the view is emptied — its ranks
//     closed, `ranks` empty — before the error is thrown; open again. A failure before any
//     rank moved (the manifest unreadable, or of another job: errc::not_a_datastore) leaves
//     the view as it was.
//   * No other thread may use the view's ranks meanwhile (manager::refresh's caveat).
std::uint64_t refresh(distributed_view& v);

// Opens rank `rank`'s datastore at the local epoch `man` records for it, checking its uuid
// (the errors above). Read-write opens confirm an accepted prepared epoch.
manager open_rank(const std::string& path, const manifest& man, int rank, bool read_only,
                  const options& opt = options::from_env());

}  // namespace pheap::mpi
