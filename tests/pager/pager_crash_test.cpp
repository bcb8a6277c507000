// Crash: a child process writing and flushing through a pager over a real sparse_store is
// SIGKILLed at a random moment, 120 times per engine (tracking modes rotate). The reopened
// store must hold exactly the state of the last acknowledged flush or of the next one (the
// commit may complete before the acknowledgement is written), byte for byte — decided by the
// committed root, which names the iteration.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "pager_test_util.hpp"

namespace pheap::test {
namespace {

constexpr std::size_t kPs = 4096, kPages = 128;

// Content of every page after iteration k of the child's deterministic workload.
std::vector<std::uint64_t> last_writer(std::uint64_t seed, std::uint64_t k,
                                       std::size_t pages = kPages) {
  std::vector<std::uint64_t> v(pages, 0);
  for (std::uint64_t j = 1; j <= k; ++j) {
    std::mt19937_64 rng(seed * 1000003 + j);
    const std::size_t n = 1 + rng() % 24;
    for (std::size_t i = 0; i < n; ++i) v[rng() % pages] = j;
  }
  return v;
}

class PagerCrash : public ::testing::TestWithParam<std::string> {};

// A child killed by SIGKILL: its acknowledgement lines (one epoch per line), its wait status,
// and whether its stdout ended before the kill.
struct killed_child {
  std::string acks;
  int status = 0;
  bool eof = false;
};

// Runs `argv` with stdout to a pipe, reads its lines until `want_acks` of them or `give_up`,
// waits `delay` more, kills it with SIGKILL and reads what it wrote before dying.
void run_and_kill(const std::vector<std::string>& argv, std::size_t want_acks, std::chrono::seconds give_up,
                  std::chrono::microseconds delay, killed_child& k) {
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::close(out[0]);
    ::close(out[1]);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(out[1]);
  char buf[4096];
  ssize_t n;
  const auto until = std::chrono::steady_clock::now() + give_up;
  while (static_cast<std::size_t>(std::count(k.acks.begin(), k.acks.end(), '\n')) < want_acks &&
         std::chrono::steady_clock::now() < until) {
    pollfd p{out[0], POLLIN, 0};
    if (::poll(&p, 1, 100) > 0) {
      n = ::read(out[0], buf, sizeof buf);
      if (n <= 0) {
        k.eof = true;
        break;
      }
      k.acks.append(buf, static_cast<std::size_t>(n));
    }
  }
  std::this_thread::sleep_for(delay);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &k.status, 0);
  while ((n = ::read(out[0], buf, sizeof buf)) > 0) k.acks.append(buf, static_cast<std::size_t>(n));
  ::close(out[0]);
}

// The epoch of the last complete acknowledgement line (0: none).
std::uint64_t last_acknowledged(const std::string& acks) {
  const std::size_t end = acks.rfind('\n');
  if (end == std::string::npos) return 0;
  std::size_t begin = end == 0 ? std::string::npos : acks.rfind('\n', end - 1);
  begin = begin == std::string::npos ? 0 : begin + 1;
  return std::stoull(acks.substr(begin, end - begin));
}

// Reopens the child's store: it is at the acknowledged flush or the next one (root_k), and
// every page holds exactly what the workload's last writer up to root_k wrote.
void expect_reopened_exact(const std::string& ds, std::shared_ptr<io::engine> engine, std::uint64_t seed,
                           std::size_t pages, std::size_t ps, std::uint64_t acked, const std::string& what,
                           std::uint64_t& root_k) {
  store_options o;
  o.engine = std::move(engine);
  auto st = sparse_store::open(ds, o);
  root_k = 0;
  if (const auto root = st->root(); !root.empty()) {
    ASSERT_EQ(root.size(), 8u);
    std::memcpy(&root_k, root.data(), 8);
  }
  ASSERT_TRUE(root_k == acked || root_k == acked + 1)
      << what << ": acknowledged " << acked << ", reopened at " << root_k;
  const auto lw = last_writer(seed, root_k, pages);
  std::vector<std::byte> page(ps);
  for (std::size_t p = 0; p < pages; ++p) {
    page_read r{p, page.data()};
    st->read_pages(std::span(&r, 1));
    const auto want = lw[p] == 0 ? std::vector<std::uint8_t>(ps, 0) : pattern(ps, seed, p, lw[p]);
    ASSERT_EQ(std::memcmp(page.data(), want.data(), ps), 0) << what << " page " << p << " at k=" << root_k;
  }
}

// A new datastore at `ds` of `pages` pages of `ps` bytes, in segments of `segment_size`.
void create_store(const std::string& ds, std::size_t pages, std::size_t ps, std::uint64_t segment_size,
                  std::shared_ptr<io::engine> engine) {
  store_options o;
  o.capacity = pages * ps;
  o.page_size = static_cast<std::uint32_t>(ps);
  o.segment_size = segment_size;
  o.engine = std::move(engine);
  sparse_store::create(ds, o);
}

TEST_P(PagerCrash, SigkillDuringWritesAndFlushesReopensAtTheAcknowledgedOrNextFlush) {
  PHEAP_REQUIRE_UFFD(dirty_tracking::wp_async);
  backing bk(GetParam());
  try {
    bk.engine();
  } catch (const error& e) {
    PHEAP_REQUIRE_FEATURE(e.what());
  }
  const std::string child = sibling_binary("pager_crash_child");
  const char* modes[] = {"wp_async", "wp_sync", "all_resident"};
  std::mt19937_64 rng(12345);
  std::size_t beyond_ack = 0, total_acks = 0, with_ack = 0;
  for (int it = 0; it < 120; ++it) {
    temp_dir dir;
    const std::string ds = dir / "ds";
    create_store(ds, kPages, kPs, 1 << 20, bk.engine());
    const std::uint64_t seed = 1000 + static_cast<std::uint64_t>(it);
    // Kill after a random number (0-3) of acknowledged flushes plus a random delay, so every
    // iteration dies at a different point of writes/evictions/flushes whatever the load.
    const std::size_t want_acks = rng() % 4;
    killed_child k;
    run_and_kill({child, ds, GetParam(), modes[it % 3], std::to_string(seed)}, want_acks, std::chrono::seconds(30),
                 std::chrono::microseconds(rng() % 20000), k);
    if (HasFatalFailure()) return;
    ASSERT_TRUE(WIFSIGNALED(k.status) && WTERMSIG(k.status) == SIGKILL) << "child status " << k.status;
    with_ack += want_acks > 0;
    const std::uint64_t acked = last_acknowledged(k.acks);
    total_acks += acked;
    std::uint64_t root_k = 0;
    expect_reopened_exact(ds, bk.engine(), seed, kPages, kPs, acked,
                          "iteration " + std::to_string(it) + " (" + modes[it % 3] + ")", root_k);
    if (HasFatalFailure()) return;
    beyond_ack += root_k == acked + 1;
  }
  EXPECT_GE(total_acks, with_ack) << "children never got far enough to test anything";
  EXPECT_GT(with_ack, 60u);
  std::printf("acknowledged flushes: %zu; reopened one beyond the acknowledgement: %zu\n",
              total_acks, beyond_ack);
}

INSTANTIATE_TEST_SUITE_P(engines, PagerCrash, ::testing::Values("posix", "io_uring"));

// The same with huge pages (pager_options::huge_pages = always, 2 MiB pages, a buffer of 4):
// every fill is a huge page moved in whole and counted as written, every eviction moves one
// out whole into the pool. Fewer iterations: each flush writes up to 24 pages of 2 MiB.
TEST(PagerCrashHuge, SigkillWithHugePagesReopensAtTheAcknowledgedOrNextFlushWithEveryByteExact) {
  PHEAP_REQUIRE_UFFD(dirty_tracking::wp_async);
  constexpr std::size_t ps = std::size_t{2} << 20, pages = 16;
  const std::string child = sibling_binary("pager_crash_child");
  const char* modes[] = {"wp_async", "wp_sync", "all_resident"};
  std::mt19937_64 rng(777);
  std::size_t with_ack = 0, total_acks = 0;
  for (int it = 0; it < 9; ++it) {
    temp_dir dir;
    const std::string ds = dir / "ds";
    create_store(ds, pages, ps, 32 * ps, io::make_posix_engine());
    const std::uint64_t seed = 5000 + static_cast<std::uint64_t>(it);
    const std::size_t want_acks = 1 + rng() % 3;
    killed_child k;
    run_and_kill({child, ds, "posix", modes[it % 3], std::to_string(seed), "huge"}, want_acks, std::chrono::seconds(60),
                 std::chrono::microseconds(rng() % 50000), k);
    if (HasFatalFailure()) return;
    ASSERT_FALSE(k.eof && WIFEXITED(k.status) && WEXITSTATUS(k.status) == 4)
        << "the child's pager did not turn huge pages on";
    ASSERT_TRUE(WIFSIGNALED(k.status) && WTERMSIG(k.status) == SIGKILL) << "child status " << k.status;
    const std::uint64_t acked = last_acknowledged(k.acks);
    with_ack += acked > 0;
    total_acks += acked;
    std::uint64_t root_k = 0;
    expect_reopened_exact(ds, io::make_posix_engine(), seed, pages, ps, acked,
                          "iteration " + std::to_string(it) + " (" + modes[it % 3] + ")", root_k);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(with_ack, 6u) << "children never got far enough to test anything";
  std::printf("huge: acknowledged flushes: %zu\n", total_acks);
}

// The same with write-behind (wp_async, in core, a round every 1 ms, 3 ms between each
// iteration's writes and its flush): pages written behind into the working epoch are never
// what a reopen finds unless a flush committed them.
TEST(PagerCrashWriteBehind, SigkillWithWriteBehindReopensAtTheAcknowledgedOrNextFlush) {
  PHEAP_REQUIRE_UFFD(dirty_tracking::wp_async);
  const std::string child = sibling_binary("pager_crash_child");
  std::mt19937_64 rng(4747);
  std::size_t with_ack = 0, total_acks = 0;
  for (int it = 0; it < 40; ++it) {
    temp_dir dir;
    const std::string ds = dir / "ds";
    create_store(ds, kPages, kPs, 1 << 20, io::make_posix_engine());
    const std::uint64_t seed = 9000 + static_cast<std::uint64_t>(it);
    // The first child lives past iteration 20, where it exits 5 if nothing was written behind.
    const std::size_t want_acks = it == 0 ? 24 : rng() % 8;
    killed_child k;
    run_and_kill({child, ds, "posix", "wp_async", std::to_string(seed), "wbehind"}, want_acks,
                 std::chrono::seconds(30), std::chrono::microseconds(rng() % 20000), k);
    if (HasFatalFailure()) return;
    ASSERT_FALSE(k.eof && WIFEXITED(k.status) && WEXITSTATUS(k.status) == 4)
        << "the child's pager did not turn write-behind on";
    ASSERT_FALSE(k.eof && WIFEXITED(k.status) && WEXITSTATUS(k.status) == 5)
        << "nothing was written behind in 20 iterations";
    ASSERT_TRUE(WIFSIGNALED(k.status) && WTERMSIG(k.status) == SIGKILL) << "child status " << k.status;
    const std::uint64_t acked = last_acknowledged(k.acks);
    with_ack += acked > 0;
    total_acks += acked;
    std::uint64_t root_k = 0;
    expect_reopened_exact(ds, io::make_posix_engine(), seed, kPages, kPs, acked,
                          "iteration " + std::to_string(it) + " (write-behind)", root_k);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(with_ack, 25u) << "children never got far enough to test anything";
  std::printf("write-behind: acknowledged flushes: %zu\n", total_acks);
}

}  // namespace
}  // namespace pheap::test
