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
//   run_victim     one victim run with a watchdog, every line fed to the tracker (and to the
//                  campaign's own outcome type, see victim_run::parse)
//   campaign       the timer, directories, victim binary, random numbers and counters of a test
//   outcome_counts / died_of_sigbus / one_error_line / check_completed / unexpected_end
//                  the pieces of the fault campaigns' classification of a faulty run
//   make_base / make_crash_state
//                  the datastores a campaign starts from: written cleanly, or left by a victim
//                  killed inside a flush
//   verify_and_rerun
//                  the checks after a faulty run: verify, clean rerun, verify again
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "pheap/io.hpp"
#include "support/fault_engine.hpp"
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
  // have left nothing, or a datastore whose workload is not initialised yet; a directory that
  // is not a datastore is a problem (creation publishes only complete datastores).
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
        // A creation publishes a complete datastore or nothing (sparse_store/FORMAT.md,
        // "Creation with content"): a directory that is not one is a broken creation, not an
        // unacknowledged one. (Removed, so that the campaign goes on with a new creation.)
        out.push_back({"a killed creation left " + ds + ", which is not a datastore (" +
                           to_string(e.code()) + ": " + e.what() + ")",
                       false});
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

// ---- shared by heap_kill_test.cpp, fault_read_error_test.cpp, fault_write_error_test.cpp ----

constexpr std::size_t kVictimBuffer = 512u << 10;

// For its lifetime every victim this process starts runs the huge-page geometry
// (REL_HEAP_CHILD_HUGE=1: rel_heap_child --huge, 2 MiB pages mapped by 2 MiB entries, a buffer
// of at least 4 pages): a campaign's scenario `..._huge` wraps its body in one.
struct huge_victims {
  huge_victims() { ::setenv("REL_HEAP_CHILD_HUGE", "1", 1); }
  ~huge_victims() { ::unsetenv("REL_HEAP_CHILD_HUGE"); }
  huge_victims(const huge_victims&) = delete;
  huge_victims& operator=(const huge_victims&) = delete;
};

// Whether a heap of the huge geometry gets huge pages here (UFFDIO_MOVE, THP not `never`).
inline bool huge_pages_possible() {
  scratch_dir d;
  try {
    options o = mix::heap_options(8u << 20);
    mix::use_huge_pages(o);
    manager m(create_only, d / "probe", o);
    return m.stats().pager.huge_pages;
  } catch (const std::exception&) {
    return false;
  }
}
constexpr int kLineTimeoutMs = 60000;  // the watchdog: a victim silent this long is hung

#ifdef PHEAP_TOOL_BIN
inline const std::string kTool = PHEAP_TOOL_BIN;
#else
inline const std::string kTool;
#endif

// Every problem of `ps` is a test failure, counted in `ta`.
inline void report(tally& ta, const std::string& ctx, const mix_tracker& t, const std::vector<problem>& ps) {
  for (const auto& p : ps) {
    ++ta.failures;
    if (p.data_lost) ++ta.lost;
    ADD_FAILURE() << ctx << " (seed " << t.seed << ", W " << t.W << "): " << p.what;
  }
}

inline void fresh_copy(const std::string& from, const std::string& to) {
  std::error_code ec;
  std::filesystem::remove_all(to, ec);
  copy_dir(from, to);
}

// The end of one victim run. A campaign that reads more of the victim's lines derives from it
// and hides parse() (called with every complete line).
struct victim_run {
  child_result r;
  bool hung = false;
  bool opened = false, closed = false;
  void parse(const std::string&) {}
};

// One victim run, every line fed to the tracker; a victim silent for kLineTimeoutMs is killed
// and reported as hung.
template <class Outcome = victim_run>
Outcome run_victim(const std::vector<std::string>& argv, const std::vector<std::string>& env, mix_tracker& t,
                   std::vector<problem>& ps) {
  Outcome o;
  child_process c(argv, env);
  line_reader lines(c.stdout_fd());
  std::string out;
  try {
    for (std::optional<std::string> l; (l = lines.next(kLineTimeoutMs));) {
      out += *l + "\n";
      const std::string kind = t.on_line(*l, ps);
      o.parse(*l);
      if (kind == "opened") o.opened = true;
      if (kind == "closed") o.closed = true;
    }
  } catch (const std::exception& e) {
    o.hung = true;
    ps.push_back({std::string("hung: ") + e.what(), false});
    c.kill9();
  }
  o.r = c.wait();
  o.r.out = out + o.r.out;  // the lines read above, then any incomplete rest
  return o;
}

// A faulty victim's environment: the fault rule; for odd `i` pread/pwrite as the inner engine
// (else the default: io_uring where it works); with `read_ahead`, for every third `i` 8 pages
// of read-ahead on sequential faults.
inline std::vector<std::string> victim_env(const std::string& rule, std::uint64_t i, bool read_ahead) {
  std::vector<std::string> env{rule};
  if (i % 2 == 1) env.push_back("PHEAP_IO_ENGINE=posix");
  if (read_ahead && i % 3 == 2) env.push_back("PHEAP_READ_AHEAD=8");
  return env;
}

// The command line of a victim on the fault-injecting engine: `steps` steps of the job of `t`
// on `ds`; `options` (rel_heap_child's, before the command) as well.
inline std::vector<std::string> faulty_victim(const std::string& bin, const std::string& ds, const mix_tracker& t,
                                              std::uint64_t steps, const std::vector<std::string>& options = {}) {
  std::vector<std::string> argv{bin, "--fault-engine"};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.insert(argv.end(), {"mix", ds, std::to_string(t.seed), std::to_string(steps), std::to_string(kVictimBuffer)});
  return argv;
}

// `argv` with `env` on a fresh copy of `from` in `ds`, `t` starting as a copy of `t0`.
template <class Outcome>
Outcome run_on_copy(const std::string& from, const std::string& ds, const std::vector<std::string>& argv,
                    const std::vector<std::string>& env, const mix_tracker& t0, mix_tracker& t,
                    std::vector<problem>& ps) {
  fresh_copy(from, ds);
  t = t0;
  return run_victim<Outcome>(argv, env, t, ps);
}

// ---- classification of a faulty run (each campaign's classify() accepts its own outcomes) --

// The cause every injected failure's message carries.
inline const std::string kInjected = "injected by fault engine";

struct outcome_counts {
  std::uint64_t error_io = 0, error_no_space = 0, error_poisoned = 0, completed = 0, completed_reported = 0,
                completed_unreported = 0, sigbus = 0, snapshots_acked = 0, snapshots_failed = 0;
};

inline bool died_of_sigbus(const child_result& r) { return WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGBUS; }

// The one "error CODE ERRNO MESSAGE" line of a victim that exited 1; nullopt (and a problem)
// unless there is exactly one.
struct error_line {
  int code = -1, err = -1;
  std::string msg;
};
inline std::optional<error_line> one_error_line(const child_result& r, std::vector<problem>& ps) {
  const auto lines = lines_with(r.out, "error ");
  error_line e;
  if (lines.size() != 1 || std::sscanf(lines[0].c_str(), "%d %d", &e.code, &e.err) != 2) {
    ps.push_back({"exit 1 without one error line: " + r.out.substr(0, 500), false});
    return std::nullopt;
  }
  e.msg = lines[0];
  return e;
}

// A victim that exited 0: counted; it must have printed "closed" and, for expect_steps >= 0,
// acknowledged exactly that step last.
inline void check_completed(const victim_run& o, std::int64_t expect_steps, const mix_tracker& t, outcome_counts& n,
                            std::vector<problem>& ps) {
  ++n.completed;
  if (!o.closed) ps.push_back({"exit 0 without \"closed\"", false});
  if (expect_steps >= 0 && t.W != expect_steps) {
    ps.push_back({"completed, but the last acknowledged step is " + std::to_string(t.W) + ", not " +
                      std::to_string(expect_steps),
                  false});
  }
}

inline void unexpected_end(const child_result& r, std::vector<problem>& ps) {
  ps.push_back({"unexpected end: " + r.describe() + "; stdout " + r.out.substr(0, 300), false});
}

// What every fault campaign starts with; a test binds the members it uses:
//   mixc::campaign c;
//   auto& [timer, work, bin, ds, rng, ta, n, tool_runs] = c;
struct campaign {
  scenario_timer timer;
  scratch_dir work;
  std::string bin = sibling_binary("rel_heap_child");
  std::string ds = work / "d";  // the datastore of the faulty runs
  std::mt19937_64 rng{std::random_device{}()};
  tally ta;
  outcome_counts n;
  std::uint64_t tool_runs = 0;  // runs verified with `pheap check` as well
};

// ---- the fault engine's environment hooks (PHEAP_FAULT_EIO_AT, PHEAP_FAULT_ENOSPC_AT) -------

// `err` is an injected failure of `path`: errc `code` with errno `sys_errno`.
inline void expect_injected_error(const error& err, errc code, int sys_errno, const std::string& path) {
  EXPECT_EQ(err.code(), code);
  EXPECT_EQ(err.sys_errno(), sys_errno);
  EXPECT_NE(std::string(err.what()).find(path), std::string::npos) << err.what();
  EXPECT_NE(std::string(err.what()).find("injected"), std::string::npos) << err.what();
}

// With `var`=`bad` in the environment the fault engine refuses to start, naming the variable.
inline void expect_rule_rejected(const char* var, const char* bad) {
  try {
    test::make_fault_engine(io::make_posix_engine());
    ADD_FAILURE() << "accepted " << var << "=" << bad;
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument) << bad;
    EXPECT_NE(std::string(e.what()).find(var), std::string::npos) << e.what();
  }
}

// ---- the datastores a campaign starts from --------------------------------------------------
// These ASSERT: call them inside ASSERT_NO_FATAL_FAILURE.

// `steps` clean steps of `t`'s job in `dir` (created or continued).
inline void clean_run(const std::string& bin, const std::string& dir, mix_tracker& t, std::uint64_t steps) {
  std::vector<problem> ps;
  const auto o = run_victim({bin, "mix", dir, std::to_string(t.seed), std::to_string(steps),
                             std::to_string(kVictimBuffer)}, {}, t, ps);
  ASSERT_TRUE(o.r.exited(0) && ps.empty()) << "base run: " << o.r.describe();
}

// A new job of `t0` (seed from `rng`; an even one with `even_seed`: its victims run without
// the victim cache, rel_heap_child's rule) — a datastore `dir` at step `steps`, written cleanly.
inline void make_base(const std::string& bin, const std::string& dir, std::mt19937_64& rng, mix_tracker& t0,
                      std::uint64_t steps, bool even_seed = false) {
  t0.reset(even_seed ? rng() & ~std::uint64_t{1} : rng());
  ASSERT_NO_FATAL_FAILURE(clean_run(bin, dir, t0, steps));
  ASSERT_EQ(t0.W, static_cast<std::int64_t>(steps));
}

// A crash state in `crash` (replacing the previous one), a new job of `t0` (seed from `rng`):
// 3..10 clean steps, then a victim killed 0..1.5 ms into its 2nd..5th flush. It is verified
// (which also moves W to what the crash state holds), problems reported as "crash state <st>".
inline void make_crash_state(const std::string& bin, const std::string& crash, std::mt19937_64& rng, mix_tracker& t0,
                             tally& ta, std::uint64_t st) {
  std::error_code ec;
  std::filesystem::remove_all(crash, ec);
  t0.reset(rng());
  ASSERT_NO_FATAL_FAILURE(clean_run(bin, crash, t0, 3 + rng() % 8));
  std::vector<problem> ps;
  child_process c({bin, "mix", crash, std::to_string(t0.seed), "1000000", std::to_string(kVictimBuffer)});
  line_reader lines(c.stdout_fd());
  std::uint64_t k = 2 + rng() % 4;
  while (k > 0) {
    const auto l = lines.next(kLineTimeoutMs);
    ASSERT_TRUE(l.has_value()) << "crash-state victim ended early";
    if (t0.on_line(*l, ps) == "flushing") --k;
  }
  std::this_thread::sleep_for(std::chrono::microseconds(rng() % 1500));
  c.kill9();
  for (std::optional<std::string> l; (l = lines.next(kLineTimeoutMs));) t0.on_line(*l, ps);
  ASSERT_TRUE(c.wait().killed());
  t0.verify(crash, ps);
  report(ta, "crash state " + std::to_string(st), t0, ps);
}

// ---- after a faulty run ---------------------------------------------------------------------

// A clean open after the faulty run: opens (at W or W+1), runs one step, acknowledges it.
inline void clean_rerun(const std::string& bin, const std::string& ds, mix_tracker& t, std::vector<problem>& ps) {
  const std::int64_t before = t.W;
  const auto o = run_victim({bin, "mix", ds, std::to_string(t.seed), "1", std::to_string(kVictimBuffer)}, {}, t, ps);
  if (o.hung) return;
  if (!o.r.exited(0) || !o.opened || !o.closed) {
    ps.push_back({"the next clean open failed: " + o.r.describe() + "; stdout " + o.r.out.substr(0, 300), false});
  } else if (t.W <= before) {
    ps.push_back({"the next clean open acknowledged no new step", false});
  }
}

// The datastore verifies (with `pheap check` when `tool`), and passes what `also` checks; a
// clean rerun works and the datastore verifies again. Problems reported as "<ctx> verify" and
// "<ctx> clean rerun".
inline void verify_and_rerun(const std::string& bin, const std::string& ds, mix_tracker& t, bool tool, tally& ta,
                             const std::string& ctx,
                             const std::function<void(std::vector<problem>&)>& also = {}) {
  std::vector<problem> ps;
  t.verify(ds, ps, tool ? kTool : std::string());
  if (also) also(ps);
  report(ta, ctx + " verify", t, ps);
  ps.clear();
  clean_rerun(bin, ds, t, ps);
  t.verify(ds, ps);
  report(ta, ctx + " clean rerun", t, ps);
}


// The end of one faulty run of a campaign: counted, its problems `ps` reported as `ctx`; then
// verify_and_rerun, with `pheap check` when `tool` (and the tool is built; counted in
// `tool_runs`).
inline void end_faulty_run(const std::string& bin, const std::string& ds, mix_tracker& t,
                           const std::vector<problem>& ps, bool tool, tally& ta, std::uint64_t& tool_runs,
                           const std::string& ctx, const std::function<void(std::vector<problem>&)>& also = {}) {
  ++ta.iterations;
  report(ta, ctx, t, ps);
  tool = tool && !kTool.empty();
  tool_runs += tool ? 1 : 0;
  verify_and_rerun(bin, ds, t, tool, ta, ctx, also);
}

}  // namespace pheap::test::mixc
