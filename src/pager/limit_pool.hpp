// src/pager/limit_pool.hpp — the memory limit that automatic buffers share: the pagers that
// follow the same limit are members of one pool, which holds the bytes their buffers hold
// together and a cap on them. Under a memory cgroup the pool is shared by every process of
// the same user in that cgroup (MPI ranks of one node in a job's cgroup); under the RAM limit
// (no cgroup: a quarter of RAM per process) it is the process's own.
//
// Why: each automatic buffer follows its limit by sampling it every period (buffer_budget.hpp
// B4), and a pager alone grows only up to its own target, which a sample keeps below the limit.
// Two pagers each counted the other's buffer as "the rest of the process", so each sized
// itself at open as if alone, and between two samples both filled — together past the limit:
// two 38 MiB buffers in a 64 MiB cgroup were OOM-killed within 70 ms, in one process and in
// two (PagerBudget.TwoAutomaticBuffers…, PagerBudget.TwoProcesses…). The pool closes that
// window at the grant (buffer_budget.hpp B6):
//   P1  every slot a member grants takes its bytes (page + bookkeeping) from the pool, and every
//       slot it releases gives them back; a grant that would take the members past the cap
//       fails, and is recorded as a refusal of that member.
//   P2  the cap is what the limit leaves after the rest of the cgroup (without any member's
//       pooled memory) and the reserve; each member's sample sets it (limit_follower), and a
//       member's target is the cap less what the other members hold.
//   P3  fair shares under contention: while another member was refused within the last
//       kContention, a member's target is at most cap / members, so the one that filled first
//       gives back what a newcomer needs; without contention a member may hold what the others
//       leave (an idle member keeps what it holds: its pages are its working set). A member
//       that needs slots (its fault waits, its evictor runs) while it holds less than
//       cap / members, below its own maximum, counts as refused too (note_wanting): its own
//       target, the cap less what the others hold, stops it before it asks the pool, so a
//       newcomer that samples in step with the others is never refused by P1 and would keep
//       the little they leave it (two pagers of one cgroup held 40 and 10 MiB in
//       PagerBudget.TwoAutomaticBuffers… once the pagers' own memory was counted 2 MiB
//       tighter).
//   P4  a member whose process died without leaving (SIGKILL, OOM kill) is found by the next
//       reap() of any member (its process is gone, a zombie, or another process with its pid)
//       and what it held is given back.
// Until the first sample the cap is unbounded (the pager takes one before its region can
// fault).
//
// Shared pools live in /dev/shm/pheap-pool-<uid>-<hash of the limit's name> (a 4 KiB file of
// atomics; join and leave take an flock on it; the last member to leave removes it). Caveats:
// two grants at once may both be refused where one would have fitted (each counts first and
// takes back what passes the cap: the pool is never past it for long); processes of other users, and pagers with a fixed buffer
// (PHEAP_BUFFER_SIZE), are not members, so their memory is part of every member's rest; more
// than kSlots members: the later ones follow the limit alone, as before the pool; no /dev/shm:
// the pool is the process's own.
//
// Abandoned files (P5): a process killed while it was the last member of its pool leaves the
// file behind, and when the limit's name is not used again (a batch job's cgroup, a bench
// run's) nothing would ever leave it. So the first shared pool a process opens first sweeps
// /dev/shm: a pool file of this user, of this layout, whose every member is dead (P4's rule)
// and that no one holds locked is removed under its flock — the same removal as a last
// leave(), so a process that opened it meanwhile finds it unlinked when it joins and starts a
// fresh one. Caveat (as P4's): a member in another pid namespace that shares this /dev/shm
// looks dead.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace pheap::paging {

class limit_pool {
 public:
  static constexpr std::chrono::milliseconds kContention{100};
  static constexpr int kSlots = 64;

  // A pool of this process's own (tests; the RAM limit).
  limit_pool();
  ~limit_pool();
  limit_pool(const limit_pool&) = delete;
  limit_pool& operator=(const limit_pool&) = delete;

  // The pool of the pagers that follow the limit named `limit_name` (memory_limit::name()):
  // shared with the other processes of this user in it when `across_processes`, else this
  // process's own. Made on first use; one object per process and name.
  static std::shared_ptr<limit_pool> of(const std::string& limit_name, bool across_processes);

  // Membership: a member id, or -1 when every slot is taken (then not a member); leave() gives
  // back what the member still holds.
  int join();
  void leave(int member);
  int members() const noexcept;
  // P4: gives back what dead members held. Cheap to call often (at most every 100 ms it looks).
  void reap();
  // P5: removes the pool files in `dir` (/dev/shm) of this user whose members are all dead;
  // the number removed. of() calls it once per process, before its first shared pool.
  static int remove_abandoned(const std::string& dir = "/dev/shm");
  bool shared() const noexcept { return fd_ >= 0; }
  const std::string& path() const noexcept { return path_; }  // the shared file, or empty

  // P1: takes `bytes` unless the members would then hold more than the cap (then records the
  // refusal of `member` and returns false).
  bool take(std::int64_t bytes, int member) noexcept;
  // Takes `bytes` past the cap (a grant that must not fail: buffer_budget B2's exception).
  void take_anyway(std::int64_t bytes, int member) noexcept;
  void give(std::int64_t bytes, int member) noexcept;
  std::int64_t held() const noexcept;
  // Whether a grant of `bytes` would be refused now.
  bool full_for(std::int64_t bytes) const noexcept { return held() + bytes > cap(); }

  // P2.
  void set_cap(std::int64_t bytes) noexcept;
  std::int64_t cap() const noexcept;

  // P3: `member` needs slots while it holds less than cap / members: recorded as a
  // refusal of it.
  void note_wanting(int member) noexcept;
  // P3: a member other than `member` was refused within kContention of `now`.
  bool contended_by_other(int member, std::chrono::steady_clock::time_point now) const noexcept;

  struct state;  // the pool's words (limit_pool.cpp), in this process or in the shared file

 private:
  limit_pool(int fd, state* s, std::string path);
  state& st() const noexcept { return *s_.load(std::memory_order_acquire); }
  // Under mu_ and the file's flock: a file the last member of all removed is replaced by a
  // new one (no member of this process can be in it: the last one left). The old mapping
  // stays until the object goes (a racing reader may still look at it).
  bool replace_if_unlinked();

  std::atomic<state*> s_{nullptr};
  int fd_ = -1;  // the shared file (flock for join/leave), or -1
  std::string path_;
  std::mutex mu_;  // join/leave within the process (an flock does not exclude threads)
  std::vector<std::pair<state*, int>> old_;  // replaced mappings and descriptors
  std::atomic<std::int64_t> last_reap_ns_{0};
};

}  // namespace pheap::paging
