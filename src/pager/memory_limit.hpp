// src/pager/memory_limit.hpp — how much memory this process may use and how much of it is in
// use now, as the kernel will enforce it: the memory cgroup's limit, else a fraction of RAM.
// The pager sizes its buffer from it at construction when no buffer_size is given.
//
// Sources, in order:
//   cgroup v2  the process's cgroup (/proc/self/cgroup "0::/path" under the cgroup2 mount)
//              when it has the memory controller: limit = the smallest memory.max and
//              memory.high of it and its ancestors; usage = memory.current.
//   cgroup v1  the memory controller's hierarchy (/proc/self/cgroup "N:memory:/path"): limit =
//              min(memory.limit_in_bytes, hierarchical_memory_limit of memory.stat); usage =
//              memory.usage_in_bytes.
//   RAM        no cgroup limit below physical RAM: limit = a quarter of physical RAM; usage =
//              this process's anonymous resident memory (/proc/self/statm).
// `used` leaves out page cache that reclaim can take back without I/O (inactive_file +
// active_file − dirty − writeback of the cgroup's memory.stat): it is charged to the cgroup
// but does not make the kernel OOM-kill; dirty and writeback pages do count.
//
// The pager sizes its buffer at open (pager.cpp choose_buffer: the limit minus what is in use,
// a headroom and pheap's own memory) and then follows the limit with a limit_follower (below):
// the evictor re-samples limit and usage at most every 10 ms and the buffer's target becomes
// what the limit leaves after the rest of the process and a reserve (buffer_budget.hpp B4).
//
// Caveats: the cgroup is found once, at open: a move to another cgroup is not followed (its
// limit and usage are: they are re-read at every sample). A cgroup v2 memory.high counts as a
// limit (the kernel throttles, rather than kills, above it). v1 memory.usage_in_bytes is
// approximate (per-CPU charge batches, a few hundred KiB); the reserve covers it. Memory the
// rest of the process takes faster than the evictor gives it back (more than the reserve
// within one period, or more than the buffer at all) still meets the kernel's OOM killer.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace pheap::paging {

struct memory_sample {
  std::uint64_t limit = 0;  // bytes the process (its cgroup) may use
  std::uint64_t used = 0;   // bytes in use that reclaim cannot take back without I/O
};

class memory_limit {
 public:
  enum class kind { cgroup_v2, cgroup_v1, ram };

  // The memory cgroup of this process, or RAM when none limits it.
  static memory_limit detect();

  kind source() const noexcept { return kind_; }
  // "cgroup v2 /sys/fs/cgroup/…", "cgroup v1 /sys/fs/cgroup/memory/…" or "RAM".
  std::string name() const;
  // The limit and usage now. A file that cannot be read counts as no limit / no usage.
  memory_sample sample() const;

 private:
  kind kind_ = kind::ram;
  std::string dir_;   // the cgroup's directory (cgroup sources)
  std::string root_;  // the hierarchy's mount point (v2: the ancestors' walk stops there)
  std::uint64_t ram_ = 0;
};

// The buffer a memory limit leaves a pager at run time (buffer_budget.hpp B4):
//   rest    = used − the pager's resident buffer (resident pages × page size)
//   burst   = the largest growth of `rest` from one sample to the next that started with the
//             cgroup within 1/8 of its limit, halved every kBurstHalfLife since (a recent
//             burst counts, an old one fades)
//   reserve = max(the base reserve, min(2 × burst, limit / 8))
//   target  = (limit − rest − reserve − beside) / (page size + bookkeeping per page), in pages
// where `beside` is the pooled memory beside this buffer (limit_pool.hpp): the buffers of the
// other pagers following the same limit and this pager's own memory outside its buffer. It is
// left out of `rest` (another buffer's growth is not a burst of the application's) and taken
// off the target, so it counts once, touched or not yet: used + target + reserve = limit.
// limit − rest − reserve is the pool's cap (cap()): what the pooled memory may take together,
// including what is pooled but not touched yet. (Pooled memory touched after a sample counts
// from the next one; the reserve covers it in between, as any growth of the process.)
// The base reserve absorbs what the rest of the process grows between two samples and pheap's
// own memory that is touched late; see pager.cpp for its size. The burst term learns how fast
// the application grows: a process that took 8 MiB within one period (a batch buffer touched
// at once, a vector doubling) is given room for twice that while the burst is recent, because
// the buffer's pages are anonymous memory the kernel cannot reclaim (no swap) and a burst the
// reserve does not cover meets the OOM killer before the evictor's next sample. Only growth
// near the limit is learned from: start-up allocations made while the buffer is still filling
// had room and cost the buffer nothing later. An application that bursts at every step (each
// batch) keeps its reserve; one that burst once gets its buffer back within a few half-lives. The cap keeps one outlier from taking more than
// an eighth of the limit. Caveat: a burst larger than the reserve in force — the first one, or
// one long after the last — is not covered.
class limit_follower {
 public:
  using sample_fn = std::function<memory_sample()>;
  limit_follower(memory_limit m, std::size_t page_size, std::uint64_t bookkeeping,
                 std::uint64_t reserve)
      : limit_follower([m] { return m.sample(); }, m.name(), page_size, bookkeeping, reserve) {}
  // With a sample function of its own (tests: a double in place of the cgroup).
  limit_follower(sample_fn sample, std::string name, std::size_t page_size,
                 std::uint64_t bookkeeping, std::uint64_t reserve)
      : sample_(std::move(sample)), name_(std::move(name)), ps_(page_size),
        per_page_(page_size + bookkeeping), reserve_(reserve), last_reserve_(reserve) {}
  static constexpr std::chrono::seconds kBurstHalfLife{10};
  std::size_t operator()(std::size_t resident_pages, std::uint64_t beside_bytes = 0) {
    return (*this)(resident_pages, beside_bytes, std::chrono::steady_clock::now());
  }
  // At a given time (tests).
  std::size_t operator()(std::size_t resident_pages, std::chrono::steady_clock::time_point now) {
    return (*this)(resident_pages, 0, now);
  }
  std::size_t operator()(std::size_t resident_pages, std::uint64_t beside_bytes,
                         std::chrono::steady_clock::time_point now);
  // What the last sample left the buffers of all pagers following this limit: limit − rest −
  // reserve, in bytes (limit_pool.hpp P2).
  std::uint64_t cap() const noexcept { return last_cap_.load(std::memory_order_relaxed); }
  // "follows cgroup v1 …: limit 65.1 MiB, rest of the process 27.9 MiB, reserve 6.0 MiB
  // (bursts up to 1.2 MiB)" (the last sample), for pager_stats::buffer_target_source.
  std::string describe() const;
  // The base reserve, and the one the last sample used (≥ the base: bursts).
  std::uint64_t reserve() const noexcept { return reserve_; }
  std::uint64_t reserve_now() const noexcept { return last_reserve_.load(std::memory_order_relaxed); }

 private:
  sample_fn sample_;
  std::string name_;
  std::size_t ps_;
  std::uint64_t per_page_, reserve_;
  // The evictor's: the previous sample and the decaying burst.
  std::uint64_t prev_rest_ = 0, prev_used_ = 0;
  double burst_ = 0;
  std::chrono::steady_clock::time_point prev_time_{};
  bool sampled_ = false;
  std::atomic<std::uint64_t> last_limit_{0}, last_rest_{0}, last_reserve_, last_burst_{0},
      last_cap_{0}, last_beside_{0};
};

}  // namespace pheap::paging
