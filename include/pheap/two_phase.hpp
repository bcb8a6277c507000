// pheap/two_phase.hpp — a manager as one participant of a distributed commit.
//
// For a coordinator that makes several datastores move together (pheap::mpi: a datastore per
// rank, one global watermark). Everyday programs never need this header: they call
// manager::flush(). The protocol the coordinator runs is in src/mpi/FORMAT.md; the store's
// part (prepared epochs, the rule at open) in sparse_store/FORMAT.md "Two-phase commit".
//
// A participant manager differs from an ordinary one in three ways:
//   * Only prepare() + confirm() end an epoch. manager::flush() throws invalid_argument and
//     the destructor commits nothing: writes since the last confirmed epoch are discarded at
//     close, as after a crash. (A local commit would move the datastore past the epoch the
//     coordinator recorded, and its homes could then overwrite the epoch a rollback needs.)
//   * open() takes the highest epoch the caller accepts: the datastore opens at the newest
//     durable epoch not above it; a prepared epoch above it is discarded, one at or below it
//     is confirmed by a read-write open (read by a read-only one).
//   * manager::snapshot() copies the last confirmed epoch without flushing.
//
// Caveats:
//   * uffd backend only: the mmap backend has no watermark before its clean close
//     (errc::unavailable).
//   * Between prepare() and confirm(), an eviction of a page the prepared epoch changed waits
//     for confirm() (so do the threads faulting behind it when the buffer is full): confirm
//     promptly, from a thread that does not itself wait on heap writes. flush/prepare while
//     prepared throw invalid_argument.
//   * create() commits the new heap once locally (its first epoch): the coordinator records
//     that epoch before the datastore counts as part of the whole.
#pragma once

#include <cstdint>
#include <string>

#include "pheap/manager.hpp"

namespace pheap {

class two_phase {
 public:
  // Creates a datastore as manager(create_only, ...) does, returning a participant.
  static manager create(const std::string& path, const options& opt = options::from_env());
  // Opens at the newest durable epoch <= max_epoch (errc::corrupt if none). Read-write
  // (exclusive) unless read_only.
  static manager open(const std::string& path, std::uint64_t max_epoch, bool read_only,
                      const options& opt = options::from_env());
  // Makes everything written so far durable as a prepared epoch (manager::flush's protocol)
  // and returns it; manager::epoch() stays at the last confirmed one.
  static std::uint64_t prepare(manager& m);
  // Makes the prepared epoch the watermark and returns it. invalid_argument if none.
  static std::uint64_t confirm(manager& m);
  static bool prepared(const manager& m);
  // A read-only participant opened beside a running coordinator moves to the newest durable
  // epoch <= max_epoch, as manager::refresh() does to the newest (the same caveats: re-find
  // every object), and later refresh() calls stop there too. Returns the epoch it reads.
  // errc::invalid_argument when max_epoch is below it (a reader never moves back); when that
  // epoch is no longer in the datastore (the coordinator's next round overtook it), the
  // error of an open at it (errc::corrupt "no committed epoch at or below …").
  static std::uint64_t refresh(manager& m, std::uint64_t max_epoch);
};

}  // namespace pheap
