// src/mpi/step_hook.hpp — the named steps of the collective flush, observable by tests
// (internal; tests/mpi kill a rank at each step to check the crash table of FORMAT.md).
#pragma once

#include <cstdint>

namespace pheap::mpi::detail {

enum class flush_step {
  begin,      // entered flush(), nothing written
  prepared,   // this rank's local epoch is prepared; the manifest is not written
  committed,  // the manifest holds the new global epoch (rank 0: just synced it); not confirmed
  confirmed,  // this rank confirmed its local epoch
};

// Called on every rank at each step with the global epoch being made. Null: no hook.
using step_hook = void (*)(flush_step step, int rank, std::uint64_t global_epoch);
void set_step_hook(step_hook hook) noexcept;

}  // namespace pheap::mpi::detail
