// The scheduler of grouped insertion (pheap/graph/grouped_insert.hpp, step 3): inserting
// threads take the next bank from a shared cursor, in bank order, so each bank goes to exactly
// one of them, which prepares (sorts) and inserts it.
#include <pheap/graph/grouped_insert.hpp>

#include <exception>
#include <thread>

namespace pheap::graph::detail {

void run_parallel(unsigned n, const std::function<void(unsigned)>& f) {
  std::vector<std::exception_ptr> errs(n);
  auto body = [&](unsigned t) {
    try {
      f(t);
    } catch (...) {
      errs[t] = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  try {
    for (unsigned t = 1; t < n; ++t) pool.emplace_back(body, t);
  } catch (...) {  // could not start a thread: those started run to their end
    for (auto& th : pool) th.join();
    throw;
  }
  body(0);
  for (auto& th : pool) th.join();
  for (auto& e : errs) {
    if (e) std::rethrow_exception(e);
  }
}

void run_banks(bank_work& w, std::size_t banks, unsigned threads, std::atomic<std::uint64_t>* arcs_inserted) {
  std::atomic<std::size_t> cursor{0};
  std::atomic<bool> stop{false};
  run_parallel(std::max(1u, threads), [&](unsigned slot) {
    try {
      for (std::size_t b; !stop.load() && (b = cursor.fetch_add(1)) < banks;) {
        w.prepare(b, slot);
        const std::uint64_t n = w.insert(b, slot);
        if (arcs_inserted != nullptr) arcs_inserted->fetch_add(n, std::memory_order_relaxed);
      }
    } catch (...) {
      stop.store(true);  // every thread stops at its next bank
      throw;
    }
  });
}

}  // namespace pheap::graph::detail
