// rel_store_child — the victim process of the store crash-point sweeps.
//
//   rel_store_child run DIR ENGINE SEED PAGES EPOCHS SNAP_EPOCH SNAP_DIR
//       Opens DIR read-write (recovering whatever a previous victim left) through a
//       fault-injecting engine over ENGINE (posix|io_uring), so PHEAP_FAULT_CRASH_AT=<kind>:<n>
//       in the environment exits the process (status 86) just before its n-th I/O operation
//       of that kind. Then runs the deterministic workload of tests/store/store_test_util.hpp
//       (an eviction storm — every page of the epoch rewritten 3 times, one page per call —
//       then writes, rewrites, discards, commit) for epochs open+1 .. EPOCHS and, right after the
//       commit of SNAP_EPOCH, snapshots into SNAP_DIR. Prints, flushed, one line per
//       acknowledged step:
//           opened E | epoch E | snapshot E | snapshot-window A B | ops ANY SYNC
//       ("snapshot-window": the operation count just before and after snapshot(); "ops": the
//       operation counts of the whole run, printed after the store is closed).
//
//   rel_store_child recover DIR ENGINE
//       Opens DIR read-write (recovery), closes it, prints "opened E" and "ops ANY SYNC".
//
// Exit status: 0 done, 1 a pheap::error (message on stderr), 2 usage, 86 injected crash.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "store/store_test_util.hpp"
#include "support/fault_engine.hpp"

namespace {

void say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

std::string ops_line(const pheap::test::fault_engine& fe) {
  return "ops " + std::to_string(fe.operations(pheap::test::op_kind::any)) + " " +
         std::to_string(fe.operations(pheap::test::op_kind::sync));
}

}  // namespace

int main(int argc, char** argv) {
  using namespace pheap;
  const std::string mode = argc > 1 ? argv[1] : "";
  if (!((mode == "run" && argc == 9) || (mode == "recover" && argc == 4))) {
    std::fprintf(stderr,
                 "usage: %s run DIR ENGINE SEED PAGES EPOCHS SNAP_EPOCH SNAP_DIR\n"
                 "       %s recover DIR ENGINE\n",
                 argv[0], argv[0]);
    return 2;
  }
  try {
    auto fe = test::make_fault_engine(test::make_engine(argv[3]));
    store_options o;
    o.engine = fe;
    auto s = sparse_store::open(argv[2], o);
    say("opened " + std::to_string(s->epoch()));
    if (mode == "run") {
      const test::workload w{std::strtoull(argv[4], nullptr, 10),
                             std::strtoull(argv[5], nullptr, 10)};
      const std::uint64_t epochs = std::strtoull(argv[6], nullptr, 10);
      const std::uint64_t snap_epoch = std::strtoull(argv[7], nullptr, 10);
      for (std::uint64_t e = s->epoch() + 1; e <= epochs; ++e) {
        w.storm(*s, e, 3);
        say("epoch " + std::to_string(w.run_epoch(*s, e)));
        if (e == snap_epoch) {
          const std::uint64_t before = fe->operations(test::op_kind::any);
          s->snapshot(argv[8]);
          say("snapshot " + std::to_string(e));
          say("snapshot-window " + std::to_string(before) + " " +
              std::to_string(fe->operations(test::op_kind::any)));
        }
      }
    }
    s.reset();  // closing: its operations count too
    say(ops_line(*fe));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rel_store_child: %s\n", e.what());
    return 1;
  }
}
