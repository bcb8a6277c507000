// The scheduler of grouped insertion (pheap/graph/grouped_insert.hpp, steps 3 and 4).
//
// Each bank has a state: free -> (look-ahead) planning -> planned -> claimed, or free -> claimed
// when an inserting thread gets there first. Inserting threads take the next bank from a shared
// cursor, in bank order, so each bank goes to exactly one of them; a bank the look-ahead is
// planning is waited for (state wait), a planned one is inserted as it is, a free one is
// prepared by the inserting thread itself. The look-ahead plans banks from the cursor on, keeps
// the bytes planned for unclaimed banks under the window (waiting on the cursor otherwise) and,
// overtaken, goes on at the cursor: the next bank to be claimed (an inserting thread that claims
// it meanwhile waits for that one bank's look-ups, whose faults it would have taken itself).
#include <pheap/graph/grouped_insert.hpp>

#include <deque>
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

namespace {

enum bank_state : std::uint32_t { free_bank = 0, planning = 1, planned = 2, claimed = 3 };

class scheduler {
 public:
  scheduler(bank_work& w, std::size_t banks, std::size_t window, std::atomic<std::uint64_t>* arcs_inserted)
      : w_(w), banks_(banks), window_(window), arcs_(arcs_inserted), state_(banks) {}

  void insert(unsigned slot) {
    try {
      while (!stop_.load()) {
        const std::size_t b = cursor_.fetch_add(1);
        cursor_.notify_all();  // the look-ahead may wait for the insertion to move on
        if (b >= banks_) return;
        std::uint32_t s = free_bank;
        if (state_[b].compare_exchange_strong(s, claimed)) {
          w_.prepare(b, slot);
        } else {
          while (s == planning) {
            state_[b].wait(planning);
            s = state_[b].load();
          }
          if (stop_.load()) return;  // the look-ahead failed
        }
        const std::uint64_t n = w_.insert(b, slot);
        if (arcs_ != nullptr) arcs_->fetch_add(n, std::memory_order_relaxed);
      }
    } catch (...) {
      halt();
      throw;
    }
  }

  void look_ahead(unsigned slot) {
    std::deque<std::pair<std::size_t, std::size_t>> ahead;  // planned, unclaimed: (bank, bytes)
    std::size_t ahead_bytes = 0;
    std::size_t b = 0;
    while (!stop_.load()) {
      const std::size_t c = cursor_.load();
      for (; !ahead.empty() && ahead.front().first < c; ahead.pop_front()) ahead_bytes -= ahead.front().second;
      b = std::max(b, c);
      if (b >= banks_) return;
      if (!ahead.empty() && ahead_bytes >= window_) {
        cursor_.wait(c);
        continue;
      }
      std::uint32_t s = free_bank;
      if (!state_[b].compare_exchange_strong(s, planning)) {
        ++b;
        continue;
      }
      std::size_t bytes = 0;
      try {
        w_.prepare(b, slot);
        bytes = w_.plan(b, slot);
      } catch (...) {
        halt();  // before the state moves: a thread waiting for bank b must see stop_
        release(b);
        throw;
      }
      release(b);
      ahead.emplace_back(b, bytes);
      ahead_bytes += bytes;
      ++b;
    }
  }

 private:
  void release(std::size_t b) {
    state_[b].store(planned);
    state_[b].notify_all();
  }
  // Every thread stops at its next bank; the look-ahead wakes if it waits on the cursor.
  void halt() {
    stop_.store(true);
    cursor_.fetch_add(1);
    cursor_.notify_all();
  }

  bank_work& w_;
  const std::size_t banks_;
  const std::size_t window_;
  std::atomic<std::uint64_t>* const arcs_;
  std::vector<std::atomic<std::uint32_t>> state_;
  std::atomic<std::size_t> cursor_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace

void run_banks(bank_work& w, std::size_t banks, unsigned threads, bool look_ahead, std::size_t window,
               std::atomic<std::uint64_t>* arcs_inserted) {
  threads = std::max(1u, threads);
  scheduler s(w, banks, window, arcs_inserted);
  // The look-ahead is the last thread started: if a thread cannot be started, those started
  // are inserting threads, which finish without it.
  run_parallel(threads + (look_ahead ? 1 : 0), [&](unsigned t) {
    if (t < threads) {
      s.insert(t);
    } else {
      s.look_ahead(t);
    }
  });
}

}  // namespace pheap::graph::detail
