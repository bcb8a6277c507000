// store_crash_child DIR ENGINE SEED PAGES — the victim of the SIGKILL crash test.
//
// Opens the datastore DIR read-write (recovering whatever the previous victim left), then runs
// the deterministic workload of store_test_util.hpp epoch after epoch, forever. After each
// commit() returns it prints the epoch on stdout (one line, flushed): an acknowledged epoch
// is durable, and the parent checks exactly that after killing us at a random moment.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "store_test_util.hpp"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s DIR posix|io_uring SEED PAGES\n", argv[0]);
    return 2;
  }
  try {
    pheap::store_options o;
    o.engine = pheap::test::make_engine(argv[2]);
    const pheap::test::workload w{std::strtoull(argv[3], nullptr, 10),
                                  std::strtoull(argv[4], nullptr, 10)};
    auto s = pheap::sparse_store::open(argv[1], o);
    for (std::uint64_t e = s->epoch() + 1;; ++e) {
      const std::uint64_t got = w.run_epoch(*s, e);
      std::printf("%llu\n", static_cast<unsigned long long>(got));
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "store_crash_child: %s\n", e.what());
    return 1;
  }
}
