// Resource limits and refused kernel facilities, each in a real child (rel_heap_child):
//   * RLIMIT_NOFILE down to 16: opening (and creating) a datastore of ~100 segment files
//     either works with every byte right or fails with a specific pheap error naming the
//     datastore — never a crash, a hang or wrong data.
//   * io_uring refused: PHEAP_IO_ENGINE=posix; a seccomp filter making io_uring_setup fail
//     with EPERM (what kernel.io_uring_disabled=2 does, for the child only); and, when
//     PHEAP_GLOBAL_SYSCTL_TESTS=1 (scripts/reliability.sh sets it: it runs the campaigns one
//     at a time), the real kernel.io_uring_disabled=2 for the duration of one child, restored
//     on every path. The default engine falls back to pread/pwrite with exactly one stderr
//     line and a heap create/flush/reopen round trip works.
//     (The sysctl is global: flipping it inside a parallel ctest run would make concurrent
//     io_uring tests skip or fail, hence the opt-in.)
//   * Unprivileged: as uid/gid 65534 in a directory it owns, with vm.unprivileged_userfaultfd=0
//     (set, then restored), the pager obtains userfaultfd with UFFD_USER_MODE_ONLY and the
//     same round trip works.
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "common/test_util.hpp"
#include "pheap/pheap.hpp"
#include "reliability/reliability_util.hpp"

namespace pheap::test {
namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kMiB = 6;  // 6 MiB of data in 64 KiB segments: ~100 segment files

// Runs the helper with a generous timeout: a child that neither exits nor prints for
// `timeout_s` is killed and reported as hung (status SIGKILL, "hung" set).
struct timed_result {
  child_result r;
  bool hung = false;
};
timed_result run_helper(const std::vector<std::string>& args, const std::vector<std::string>& env = {},
                        int timeout_s = 300) {
  std::vector<std::string> argv{sibling_binary("rel_heap_child")};
  argv.insert(argv.end(), args.begin(), args.end());
  child_process c(argv, env);
  timed_result t;
  // The child writes a few lines only (far below a pipe's capacity): wait for its exit
  // without reaping it (c.wait() reaps and drains).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (;;) {
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(c.pid()), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == c.pid()) {
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      t.hung = true;
      c.kill9();
      break;
    }
    ::usleep(10000);
  }
  t.r = c.wait();
  return t;
}

bool uffd_available() {
  try {
    temp_dir d;
    manager m(create_only, d / "probe", options{});
    return true;
  } catch (const error& e) {
    return e.code() != errc::unavailable;
  }
}

std::size_t segment_files(const std::string& dir) {
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.path().filename().string().rfind("segment-", 0) == 0;
  return n;
}

std::optional<std::string> read_sysctl(const std::string& path) {
  std::ifstream f(path);
  std::string v;
  if (!(f >> v)) return std::nullopt;
  return v;
}
bool write_sysctl(const std::string& path, const std::string& v) {
  std::ofstream f(path);
  f << v << "\n";
  f.close();
  return !f.fail() && read_sysctl(path) == v;
}

// Sets a sysctl for its lifetime; restores the original value on destruction (every path,
// including a failed assertion).
class sysctl_guard {
 public:
  sysctl_guard(std::string path, const std::string& value) : path_(std::move(path)) {
    saved_ = read_sysctl(path_);
    ok_ = saved_.has_value() && write_sysctl(path_, value);
  }
  ~sysctl_guard() {
    if (saved_ && !write_sysctl(path_, *saved_)) {
      std::fprintf(stderr, "could not restore %s to %s\n", path_.c_str(), saved_->c_str());
    }
  }
  sysctl_guard(const sysctl_guard&) = delete;
  sysctl_guard& operator=(const sysctl_guard&) = delete;
  bool ok() const { return ok_; }

 private:
  std::string path_;
  std::optional<std::string> saved_;
  bool ok_ = false;
};

#define PHEAP_REQUIRE_UFFD_HEAP()                                         \
  do {                                                                    \
    if (!uffd_available()) PHEAP_REQUIRE_FEATURE("userfaultfd pager");    \
  } while (0)

// An outcome under a resource limit: "ok", or a specific pheap error naming the datastore.
// Returns "" when acceptable, else what was wrong.
std::string judge_limited(const timed_result& t, const std::string& dir, bool& worked) {
  worked = false;
  if (t.hung) return "hung: " + t.r.describe();
  if (t.r.exited(0) && t.r.out.find("ok\n") != std::string::npos) {
    worked = true;
    return "";
  }
  if (t.r.exited(1)) {
    const auto errs = lines_with(t.r.out, "error ");
    if (errs.empty()) return "exit 1 without an error line: " + t.r.describe();
    const std::string& e = errs.front();
    // "CODE ERRNO MESSAGE": the code must be a specific one and the message must name the
    // datastore (or a file inside it).
    const int code = std::stoi(e.substr(0, e.find(' ')));
    // io (EMFILE at open), unavailable (no descriptor for userfaultfd/io_uring), poisoned (a
    // an earlier EMFILE ended the epoch: the next operation reports it, with the cause).
    if (code != static_cast<int>(errc::io) && code != static_cast<int>(errc::unavailable) &&
        code != static_cast<int>(errc::poisoned)) {
      return "unexpected error code: " + e;
    }
    if (e.find(dir) == std::string::npos) return "error does not name the datastore: " + e;
    return "";
  }
  return "neither ok nor a pheap error: " + t.r.describe() + " stdout: " + t.r.out;
}

TEST(ResourceLimits, LowOpenFileLimitOpensTheDatastoreOrFailsWithAnErrorNamingIt) {
  PHEAP_REQUIRE_UFFD_HEAP();
  scenario_timer timer;
  scratch_dir work;
  const std::string ds = work / "many";
  {
    const auto t = run_helper({"roundtrip", ds, std::to_string(kMiB)});
    ASSERT_TRUE(t.r.exited(0)) << t.r.describe() << " " << t.r.out;
  }
  const std::size_t segs = segment_files(ds);
  ASSERT_GT(segs, 64u) << "the datastore must have more segment files than the lowest limit";
  std::uint64_t cases = 0, failures = 0, worked = 0;
  for (const int limit : {16, 24, 32, 48, 64, 96, 128, 4096}) {
    for (const std::string mode : {"verify", "roundtrip"}) {
      ++cases;
      const std::string dir = mode == "verify" ? ds : work / ("new-" + std::to_string(limit));
      // Reads are guarded as a program that wants errors instead of signals guards them: with
      // a few descriptors, a segment may stay unopenable for the store's whole second of
      // patience while other threads hold the rest, and a page fault can only answer SIGBUS.
      const auto t = run_helper(
          {"--nofile", std::to_string(limit), "--guard-reads", mode, dir, std::to_string(kMiB)});
      bool ok = false;
      const std::string problem = judge_limited(t, dir, ok);
      worked += ok;
      if (!problem.empty()) {
        ++failures;
        ADD_FAILURE() << mode << " with RLIMIT_NOFILE=" << limit << ": " << problem;
      }
      if (limit == 4096 && !ok) {
        ++failures;
        ADD_FAILURE() << mode << " with RLIMIT_NOFILE=4096 must work: " << t.r.describe() << " " << t.r.out;
      }
      std::printf("RLIMIT_NOFILE=%d %s: %s\n", limit, mode.c_str(),
                  ok ? "works" : lines_with(t.r.out, "error ").empty() ? "?" : lines_with(t.r.out, "error ").front().c_str());
    }
  }
  // Whatever the limited runs did, the datastore is intact.
  const auto t = run_helper({"verify", ds, std::to_string(kMiB)});
  EXPECT_TRUE(t.r.exited(0)) << t.r.describe() << " " << t.r.out;
  std::printf("%zu segment files, %llu of %llu limited runs worked\n", segs,
              static_cast<unsigned long long>(worked), static_cast<unsigned long long>(cases));
  print_result("limits_low_nofile", cases, failures, 0, timer.seconds());
}

// One refused-io_uring round trip: the engine is posix, the fallback line appears exactly
// `fallback_lines` times on stderr, the round trip verifies.
void expect_posix_round_trip(const std::vector<std::string>& pre, const std::vector<std::string>& env,
                             int fallback_lines, const std::string& what, std::uint64_t& failures) {
  scratch_dir work;
  std::vector<std::string> args = pre;
  args.insert(args.end(), {"roundtrip", work / "ds", "2"});
  const auto t = run_helper(args, env);
  const auto engines = lines_with(t.r.out, "engine ");
  const auto fallbacks = lines_with(t.r.err, "pheap: io_uring unavailable (");
  bool good = t.r.exited(0) && t.r.out.find("ok\n") != std::string::npos && engines.size() == 1 &&
              engines.front() == "posix" && static_cast<int>(fallbacks.size()) == fallback_lines;
  if (good && fallback_lines > 0) good = fallbacks.front().find("using pread/pwrite") != std::string::npos;
  if (!good) {
    ++failures;
    ADD_FAILURE() << what << ": " << t.r.describe() << "\nstdout: " << t.r.out;
  }
}

TEST(ResourceLimits, RefusedIoUringFallsBackToPreadPwriteWithOneLogLine) {
  PHEAP_REQUIRE_UFFD_HEAP();
  scenario_timer timer;
  std::uint64_t cases = 0, failures = 0;
  ++cases;
  expect_posix_round_trip({}, {"PHEAP_IO_ENGINE=posix"}, 0, "PHEAP_IO_ENGINE=posix", failures);
#if defined(__x86_64__) || defined(__aarch64__)
  ++cases;
  expect_posix_round_trip({"--no-io-uring"}, {}, 1, "io_uring_setup refused (seccomp EPERM)", failures);
#endif
  const char* global = std::getenv("PHEAP_GLOBAL_SYSCTL_TESTS");
  if (global != nullptr && std::string(global) == "1") {
    const std::string knob = "/proc/sys/kernel/io_uring_disabled";
    if (!fs::exists(knob) || ::geteuid() != 0) {
      PHEAP_REQUIRE_FEATURE("kernel.io_uring_disabled and root");
    }
    ++cases;
    sysctl_guard g(knob, "2");
    ASSERT_TRUE(g.ok()) << "could not set " << knob;
    expect_posix_round_trip({}, {}, 1, "kernel.io_uring_disabled=2", failures);
  } else {
    std::printf("kernel.io_uring_disabled=2 case not run (global sysctl: PHEAP_GLOBAL_SYSCTL_TESTS=1)\n");
  }
  print_result("limits_io_uring_refused", cases, failures, 0, timer.seconds());
}

TEST(ResourceLimits, UnprivilegedUserWithoutUnprivilegedUserfaultfdRoundTripsAHeap) {
  PHEAP_REQUIRE_UFFD_HEAP();
  const std::string knob = "/proc/sys/vm/unprivileged_userfaultfd";
  if (::geteuid() != 0) PHEAP_REQUIRE_FEATURE("root (to switch to uid 65534)");
  if (!fs::exists(knob)) PHEAP_REQUIRE_FEATURE("vm.unprivileged_userfaultfd");
  scenario_timer timer;
  std::uint64_t failures = 0;
  // Setting it to 0 only takes privileges away, from processes without CAP_SYS_PTRACE that
  // fall back to UFFD_USER_MODE_ONLY — harmless to concurrent tests, so not opt-in.
  sysctl_guard g(knob, "0");
  ASSERT_TRUE(g.ok()) << "could not set " << knob;
  scratch_dir work;
  ASSERT_EQ(::chown(work.path().c_str(), 65534, 65534), 0);
  ASSERT_EQ(::chmod(work.path().c_str(), 0700), 0);
  {
    const auto t = run_helper({"--as-nobody", "uffd-source"});
    EXPECT_TRUE(t.r.exited(0)) << t.r.describe() << " " << t.r.out;
    const auto src = lines_with(t.r.out, "uffd ");
    if (src.size() != 1 || src.front() != "userfaultfd(2) UFFD_USER_MODE_ONLY") {
      ++failures;
      ADD_FAILURE() << "uid 65534 should get userfaultfd with UFFD_USER_MODE_ONLY: " << t.r.out;
    }
  }
  {
    const auto t = run_helper({"--as-nobody", "roundtrip", work / "ds", "4"});
    if (!t.r.exited(0) || t.r.out.find("ok\n") == std::string::npos) {
      ++failures;
      ADD_FAILURE() << "round trip as uid 65534: " << t.r.describe() << " " << t.r.out;
    }
  }
  {
    // And again, reopening what uid 65534 created (recovery as that user).
    const auto t = run_helper({"--as-nobody", "verify", work / "ds", "4"});
    if (!t.r.exited(0)) {
      ++failures;
      ADD_FAILURE() << "reopen as uid 65534: " << t.r.describe() << " " << t.r.out;
    }
  }
  print_result("limits_unprivileged_uffd", 3, failures, 0, timer.seconds());
}

}  // namespace
}  // namespace pheap::test
