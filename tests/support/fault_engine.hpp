// tests/support/fault_engine.hpp — the fault-injecting io::engine: test gear, not part of
// libpheap (target pheap_testing, never installed). Wraps any engine: fail the Nth operation,
// short transfers, EINTR, deterministic crash points, power-cut simulation. The model and its
// limits are described at the top of fault_engine.cpp.
#pragma once

#include <cstdint>
#include <memory>

#include "pheap/io.hpp"

namespace pheap::test {

// ----------------------------------------------------------------------------------------
// Fault injection. Operation counting covers every call of the engine interface that touches
// the disk (each request of a batch counts as one operation; open/sync/sync_dir/rename/
// remove/truncate/punch_hole/create_dir count as one each).
//
// Environment variables, read when a fault engine is constructed (kind = any|read|write|sync|
// metadata, n >= 1; a malformed value throws errc::invalid_argument naming the variable):
//   PHEAP_FAULT_CRASH_AT=<kind>:<n>         _exit(86) just before the n-th operation of kind.
//   PHEAP_FAULT_EIO_AT=<kind>:<n>[:sticky]  the n-th operation of kind fails with EIO (errc::io,
//                                           "injected" in the message) once; ":sticky": it and
//                                           every later operation of kind fail.
//   PHEAP_FAULT_ENOSPC_AT=<kind>:<n>[:sticky]  the same with ENOSPC (errc::no_space). Rules are
//                                           installed crash, EIO, ENOSPC; the first match wins.
enum class op_kind { any, read, write, sync, metadata };

enum class fault_action {
  fail_eio,        // the operation throws errc::io (EIO) and has no effect
  fail_enospc,     // the operation throws errc::no_space (ENOSPC) and has no effect
  short_transfer,  // a read/write moves only part of the bytes; the engine must finish it
  interrupt,       // EINTR once; the engine must retry transparently
  crash,           // _exit(86) before the operation (deterministic crash points)
};

struct fault_rule {
  op_kind kind = op_kind::any;
  std::uint64_t nth = 0;          // 1-based index among operations of `kind` (0 = never)
  fault_action action = fault_action::fail_eio;
  bool sticky = false;            // keep failing every later operation of `kind` as well
};

// How each write not yet covered by a successful sync() fares in a simulated power cut.
enum class cut_policy {
  drop_all,     // none of them reached the disk
  keep_all,     // all of them did
  random,       // each independently written, dropped, or torn (512-byte sector granular)
};

class fault_engine : public io::engine {
 public:
  virtual void add_rule(const fault_rule& rule) = 0;
  virtual void clear_rules() = 0;
  virtual std::uint64_t operations(op_kind kind = op_kind::any) const = 0;

  // Simulates losing power now: rolls every file back to its state at its last successful
  // sync and then re-applies each later write according to `policy` (seeded, reproducible);
  // files created since the last sync_dir() of their directory may vanish, renames since then
  // may be undone. Afterwards every operation on this engine throws errc::io ("power lost");
  // open the datastore again with a fresh engine to recover.
  virtual void power_cut(cut_policy policy, std::uint64_t seed) = 0;
};

std::shared_ptr<fault_engine> make_fault_engine(std::shared_ptr<io::engine> inner);

}  // namespace pheap::test
