// src/pager/limit_pool.hpp — the memory limit that the automatic buffers of one process share:
// the pagers that follow the same limit (the same memory cgroup, or RAM: memory_limit.hpp) are
// members of one pool, which holds the bytes their buffers hold together and a cap on them.
//
// Why: each automatic buffer follows its limit by sampling it every period (buffer_budget.hpp
// B4), and a pager alone grows only up to its own target, which a sample keeps below the limit.
// Two pagers each counted the other's buffer as "the rest of the process", so each had sized
// itself at open as if alone, and between two samples both filled — together past the limit:
// two 38 MiB buffers in a 64 MiB cgroup were OOM-killed within 70 ms
// (PagerBudget.TwoAutomaticBuffersInOneCgroupTogetherStayWithinItsLimit). The pool closes that
// window at the grant (buffer_budget.hpp B6):
//   P1  every slot a member grants takes its bytes (page + bookkeeping) from the pool, and every
//       slot it releases gives them back; a grant that would take the members past the cap
//       fails, and is recorded as a refusal of that member.
//   P2  the cap is what the limit leaves after the rest of the process (without any member's
//       buffer) and the reserve; each member's sample sets it (limit_follower), and a member's
//       target is the cap less what the other members hold.
//   P3  fair shares under contention: while another member was refused within the last
//       kContention, a member's target is at most cap / members, so the one that filled first
//       gives back what a newcomer needs; without contention a member may hold what the others
//       leave (an idle member keeps what it holds: its pages are its working set).
// Until the first sample the cap is unbounded (the pager takes it before its region can fault).
//
// Caveats: pagers with a fixed buffer (PHEAP_BUFFER_SIZE) are not members, and their memory is
// part of every member's "rest of the process". Members see each other only within one
// process: two processes in one cgroup still each follow the cgroup alone (each sees the other
// as the rest, between samples as before).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace pheap::paging {

class limit_pool {
 public:
  static constexpr std::chrono::milliseconds kContention{100};

  // The pool of this process's members following the limit named `limit_name`
  // (memory_limit::name()); made on first use, gone with its last member.
  static std::shared_ptr<limit_pool> of(const std::string& limit_name);

  // Membership: a new member's id; leave() after its last slot was given back.
  int join() noexcept;
  void leave() noexcept { members_.fetch_sub(1, std::memory_order_relaxed); }
  int members() const noexcept { return members_.load(std::memory_order_relaxed); }

  // P1: takes `bytes` unless the members would then hold more than the cap (then records the
  // refusal of `member` and returns false).
  bool take(std::int64_t bytes, int member) noexcept;
  // Takes `bytes` past the cap (a grant that must not fail: buffer_budget B2's exception).
  void take_anyway(std::int64_t bytes) noexcept { held_.fetch_add(bytes, std::memory_order_acq_rel); }
  void give(std::int64_t bytes) noexcept { held_.fetch_sub(bytes, std::memory_order_acq_rel); }
  std::int64_t held() const noexcept { return held_.load(std::memory_order_acquire); }
  // Whether a grant of `bytes` would be refused now.
  bool full_for(std::int64_t bytes) const noexcept { return held() + bytes > cap(); }

  // P2.
  void set_cap(std::int64_t bytes) noexcept { cap_.store(bytes, std::memory_order_release); }
  std::int64_t cap() const noexcept { return cap_.load(std::memory_order_acquire); }

  // P3: a member other than `member` was refused within kContention of `now`.
  bool contended_by_other(int member, std::chrono::steady_clock::time_point now) const noexcept;

 private:
  std::atomic<std::int64_t> held_{0}, cap_{INT64_MAX};
  std::atomic<int> members_{0}, next_id_{0};
  // The last refusal: when (steady clock, ns) and whose.
  std::atomic<std::int64_t> refused_ns_{INT64_MIN / 2};
  std::atomic<int> refused_member_{-1};
};

}  // namespace pheap::paging
