// Crash model with a real process: a child (store_crash_child) runs a write/commit loop and
// prints every epoch whose commit() returned; we SIGKILL it at a random moment — mid-write,
// mid-commit, mid-checkpoint, even mid-recovery — and reopen. The datastore must hold exactly
// epoch W or W+1 (W = last acknowledged epoch), byte for byte, every time.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <thread>

#include "store_test_util.hpp"

namespace pheap::test {
namespace {

// Runs the child for `delay`, kills it with SIGKILL and returns the last epoch it printed
// (or `floor` if it printed none).
std::uint64_t run_and_kill(const std::string& dir, const std::string& engine,
                           std::uint64_t seed, std::uint64_t pages,
                           std::chrono::microseconds delay, std::uint64_t floor) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  const std::string bin = sibling_binary("store_crash_child");
  const std::string seed_s = std::to_string(seed), pages_s = std::to_string(pages);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::execl(bin.c_str(), bin.c_str(), dir.c_str(), engine.c_str(), seed_s.c_str(),
            pages_s.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out[1]);
  std::this_thread::sleep_for(delay);
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  // A child that exited on its own (rather than by our signal) failed: report it.
  if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)) {
    ::close(out[0]);
    throw std::runtime_error("crash child exited by itself, status " + std::to_string(status));
  }
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
  ::close(out[0]);
  std::uint64_t last = floor;
  std::size_t pos = 0;
  while (true) {
    const std::size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) break;  // a partial last line was not acknowledged
    last = std::stoull(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return last;
}

using StoreCrash = store_test;
PHEAP_STORE_SUITE(StoreCrash);

TEST_P(StoreCrash, SigkillAtRandomPointsAlwaysRecoversEpochWOrWPlusOne) {
  temp_dir dir;
  const std::string path = dir / "ds";
  // 4 KiB pages in 16-page segments: every epoch touches several segments, and segments are
  // created throughout the run.
  const std::uint64_t pages = 256;
  const std::uint64_t seed = 0xC0FFEE;
  sparse_store::create(path, opts(pages * 4096, 4096, 64 << 10)).reset();
  const workload w{seed, pages};

  std::mt19937_64 rng(std::random_device{}());
  const int iterations = 100;
  std::uint64_t durable = 0;  // epoch the datastore opened at last time
  int landed_on_w = 0, landed_on_w1 = 0;
  for (int it = 0; it < iterations; ++it) {
    // Mostly runs of a few commits (a commit costs several fsyncs: ~10-50 ms on the dev VM),
    // every 10th a kill before or during the child's open and recovery.
    const auto delay = std::chrono::microseconds(it % 10 == 0 ? rng() % 3000 : rng() % 150000);
    const std::uint64_t acked = run_and_kill(path, GetParam(), seed, pages, delay, durable);
    ASSERT_GE(acked, durable);

    if (it % 8 == 0) {  // read-only recovery (in memory) must agree
      auto ro = sparse_store::open(path, open_opts(true));
      ASSERT_TRUE(ro->epoch() == acked || ro->epoch() == acked + 1)
          << "iteration " << it << ": read-only open at " << ro->epoch() << ", acknowledged "
          << acked;
      ASSERT_EQ(w.check(*ro, ro->epoch()), "") << "iteration " << it << " (read-only)";
    }
    auto s = sparse_store::open(path, open_opts());
    const std::uint64_t e = s->epoch();
    ASSERT_TRUE(e == acked || e == acked + 1)
        << "iteration " << it << ": opened at epoch " << e << ", acknowledged " << acked;
    ASSERT_EQ(w.check(*s, e), "") << "iteration " << it;
    (e == acked ? landed_on_w : landed_on_w1)++;
    durable = e;
  }
  EXPECT_GT(durable, 20u) << "the children made little progress; the test lost its teeth";
  RecordProperty("epochs", static_cast<int>(durable));
  RecordProperty("landed_on_W_plus_1", landed_on_w1);
  std::printf("[ crash ] %d kills, final epoch %llu, W+1 outcomes %d\n", iterations,
              static_cast<unsigned long long>(durable), landed_on_w1);
  (void)landed_on_w;
}

// A killed writer's flock must be gone by the time the parent has reaped it, even under the
// io_uring engine (whose ring teardown the kernel defers to a worker): the store locks a
// dedicated read-only descriptor that no io_uring request ever references. Kill the child
// mid-commit (it commits back to back, each commit several fsyncs) and reopen at once — one
// attempt, no retry (open does not retry a conflicting flock either: 0 failures in 650
// immediate reopens on both engines made a retry unnecessary; see FORMAT.md "Recovery").
TEST_P(StoreCrash, ReopenRightAfterSigkillMidCommitIsNeverLocked) {
  temp_dir dir;
  const std::string path = dir / "ds";
  const std::uint64_t pages = 64, seed = 0xF10C;
  sparse_store::create(path, opts(pages * 4096, 4096, 64 << 10)).reset();
  std::mt19937_64 rng(std::random_device{}());
  std::uint64_t durable = 0;
  int locked = 0;
  std::string first;
  for (int it = 0; it < 50; ++it) {
    // 5-40 ms: past the child's open, inside its commit loop.
    const auto delay = std::chrono::microseconds(5000 + rng() % 35000);
    const std::uint64_t acked = run_and_kill(path, GetParam(), seed, pages, delay, durable);
    try {
      auto s = sparse_store::open(path, open_opts());  // immediately: no retry here
      ASSERT_TRUE(s->epoch() == acked || s->epoch() == acked + 1) << "iteration " << it;
      durable = s->epoch();
    } catch (const error& e) {
      if (e.code() != errc::locked) throw;
      if (locked++ == 0) first = "iteration " + std::to_string(it) + ": " + e.what();
      std::this_thread::sleep_for(std::chrono::seconds(1));  // let the next iteration start clean
    }
  }
  EXPECT_EQ(locked, 0) << "reopen after SIGKILL found the datastore locked " << locked
                       << " times out of 50; first: " << first;
  EXPECT_GT(durable, 0u) << "the children never committed: the kills were not mid-commit";
}

}  // namespace
}  // namespace pheap::test
