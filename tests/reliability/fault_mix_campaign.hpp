// Shared pieces of the campaigns that run the mixed heap workload (heap_mix_workload.hpp) in a
// victim process (rel_heap_child) and check the datastore it leaves behind:
// heap_kill_test.cpp (kill -9 anywhere, chained kills during recovery, kills during close) and
// fault_read_error_test.cpp (read errors during page faults and during open/recovery) and
// fault_write_error_test.cpp (write/sync errors during eviction, flush, snapshot, recovery).
//
//   line_reader    complete stdout lines of a child with a timeout (a hung victim is a
//                  failure, not a hung test)
//   mix_tracker    the reference side of one job: seed, the DRAM model's digests per step,
//                  W = the last step known durable (acknowledged by the victim, or found by an
//                  open after a crash: a commit that completed just before the kill is durable
//                  although nobody acknowledged it, and no later state may go back behind it);
//                  parses "ack S DIGEST EPOCH" / "closed S OPS" / "opened S" lines and verifies
//                  a datastore: opened read-only it must hold step W or W+1, every byte equal
//                  to the reference of that step, manager::check() clean (and, when asked,
//                  `pheap check` clean).
#pragma once

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "pheap/pheap.hpp"
#include "reliability/heap_mix_workload.hpp"
#include "reliability/reliability_util.hpp"

namespace pheap::test::mixc {

class line_reader {
 public:
  explicit line_reader(int fd) : fd_(fd) {}
  // nullopt on EOF; throws std::runtime_error when nothing complete arrives for timeout_ms.
  std::optional<std::string> next(int timeout_ms = 120000) {
    for (;;) {
      const auto nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      pollfd p{fd_, POLLIN, 0};
      const int r = ::poll(&p, 1, timeout_ms);
      if (r == 0) throw std::runtime_error("victim printed nothing for " + std::to_string(timeout_ms) + " ms");
      if (r < 0) {
        if (errno == EINTR) continue;
        throw std::runtime_error("poll failed");
      }
      char tmp[4096];
      const ssize_t n = ::read(fd_, tmp, sizeof tmp);
      if (n <= 0) return std::nullopt;
      buf_.append(tmp, static_cast<std::size_t>(n));
    }
  }

 private:
  int fd_;
  std::string buf_;
};

struct problem {
  std::string what;
  bool data_lost = false;
};

// Per-scenario counters of one PHEAP_RESULT line.
struct tally {
  std::uint64_t iterations = 0, failures = 0, lost = 0;
};

class mix_tracker {
 public:
  std::uint64_t seed = 0;
  std::int64_t W = -1;  // last acknowledged step of the current job; -1: none yet
  std::uint64_t max_step = 0;

  // A new job: datastore about to be created (W = -1) or already holding the acknowledged
  // step `acknowledged`.
  void reset(std::uint64_t new_seed, std::int64_t acknowledged = -1) {
    seed = new_seed;
    ref_ = mix::model{};
    digests_ = {ref_.digest()};
    W = acknowledged;
  }

  std::uint64_t digest_at(std::uint64_t s) {
    while (digests_.size() <= s) {
      ref_.next_step(seed);
      digests_.push_back(ref_.digest());
    }
    return digests_[s];
  }

  // Handles one line of the victim: "ack S DIGEST EPOCH" (and "closed S OPS" of mix-close,
  // an acknowledgement of S as well) move W. Returns the first word ("ack", "flushing", ...).
  std::string on_line(const std::string& line, std::vector<problem>& out) {
    unsigned long long s = 0, d = 0, e = 0;
    if (std::sscanf(line.c_str(), "ack %llu %llu %llu", &s, &d, &e) == 3) {
      if (d != digest_at(s)) out.push_back({"victim's reference digest of step " + std::to_string(s) + " differs", false});
      acknowledge(s, out);
      return "ack";
    }
    if (std::sscanf(line.c_str(), "closed %llu %llu", &s, &e) == 2) {
      acknowledge(s, out);
      return "closed";
    }
    long long o = 0;
    if (std::sscanf(line.c_str(), "opened %lld", &o) == 1) {
      // What a read-write open found is the last completed watermark: W or W+1; never less.
      if (o < W || o > W + 1) out.push_back({"victim opened step " + std::to_string(o), o < W});
      if (o > W) W = o;
      return "opened";
    }
    return line.substr(0, line.find(' '));
  }

  // Opens `ds` read-only and checks it against the reference. An unacknowledged creation may
  // have left nothing, or a directory that is not (yet) a datastore: it is removed then.
  void verify(const std::string& ds, std::vector<problem>& out, const std::string& tool = "") {
    namespace fs = std::filesystem;
    if (!fs::exists(ds)) {
      if (W >= 0) out.push_back({"datastore vanished", true});
      return;
    }
    try {
      manager m(open_read_only, ds, mix::heap_options(16u << 20));
      const auto objs = mix::find_objects(m);
      if (objs.step == nullptr) {
        // Created, workload not initialised: only before the first acknowledgement.
        if (W >= 0) out.push_back({"heap holds no workload after step " + std::to_string(W) + " was acknowledged", true});
      } else {
        const std::uint64_t s = *objs.step;
        if (static_cast<std::int64_t>(s) < W || static_cast<std::int64_t>(s) > W + 1) {
          out.push_back({"heap holds step " + std::to_string(s), static_cast<std::int64_t>(s) < W});
        } else {
          // The last completed watermark holds s: every later state must hold s or more (a
          // commit of s that landed just before the kill is durable although unacknowledged).
          W = static_cast<std::int64_t>(s);
          std::string why;
          const std::uint64_t d = mix::heap_digest(m, why);
          if (!why.empty()) {
            out.push_back({"step " + std::to_string(s) + ": " + why, false});
          } else if (d != digest_at(s)) {
            out.push_back({"step " + std::to_string(s) + ": content differs from the reference", false});
          }
        }
      }
      const auto problems = m.check();
      if (!problems.empty()) out.push_back({"manager::check(): " + problems.front(), false});
    } catch (const error& e) {
      if (W < 0 && (e.code() == errc::not_a_datastore || e.code() == errc::not_found)) {
        std::error_code ec;
        fs::remove_all(ds, ec);
        return;
      }
      out.push_back({std::string("open read-only: ") + to_string(e.code()) + ": " + e.what(), W >= 0});
      return;
    }
    if (!tool.empty()) {
      const auto c = run_child({tool, "check", ds});
      if (!c.exited(0)) out.push_back({"pheap check: " + c.describe() + " " + c.out, false});
    }
  }

 private:
  void acknowledge(std::uint64_t s, std::vector<problem>& out) {
    if (static_cast<std::int64_t>(s) < W) out.push_back({"acknowledged step went back to " + std::to_string(s), true});
    W = static_cast<std::int64_t>(s);
    if (s > max_step) max_step = s;
  }

  mix::model ref_;
  std::vector<std::uint64_t> digests_;
};

// True if a heap with a pager of `buffer` bytes can be created here (userfaultfd usable);
// false only for errc::unavailable, anything else throws.
inline bool pager_available(std::size_t buffer) {
  temp_dir probe_dir;
  try {
    manager probe(create_only, probe_dir / "probe", mix::heap_options(buffer));
  } catch (const error& e) {
    if (e.code() == errc::unavailable) return false;
    throw;
  }
  return true;
}

}  // namespace pheap::test::mixc
