// kill -9 during a container-building loop with periodic flush(): every reopen shows exactly
// the last acknowledged watermark or the one after it (a flush that completed but whose
// acknowledgement the parent had not read yet), equal to a DRAM reference, and both
// manager::check() and `pheap check` report the heap sound. The same datastore is reused
// across 60 kills, so each child also recovers from the previous crash.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <thread>

#include "manager_fixture.hpp"
#include "workload.hpp"

#ifndef PHEAP_TOOL_PATH
#define PHEAP_TOOL_PATH ""
#endif

namespace {

using namespace pheap;
using namespace pheap::test;

constexpr std::uint64_t flush_every = 40;

struct ack {
  std::uint64_t steps;
  std::uint64_t epoch;
};

// Child: open (or create), continue the workload, flush every `flush_every` steps and
// acknowledge (steps, epoch) on `fd` after each flush returns. Runs until killed.
[[noreturn]] void child_main(const std::string& path, int fd, bool create) {
  try {
    options o = small_options(512ull << 20);
    o.pager.buffer_size = 32ull << 20;  // small buffer: eviction happens during the loop
    std::unique_ptr<manager> m = create ? std::make_unique<manager>(create_only, path, o)
                                        : std::make_unique<manager>(open_only, path, o);
    heap_state s = open_state(*m);
    std::uint64_t i = *s.steps;
    if (create) {
      const ack a{0, m->flush()};
      if (::write(fd, &a, sizeof a) != sizeof a) std::_Exit(3);
    }
    for (;;) {
      apply_step(*m, s, ++i);
      if (i % flush_every == 0) {
        const ack a{i, m->flush()};
        if (::write(fd, &a, sizeof a) != sizeof a) std::_Exit(3);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "crash child: %s\n", e.what());
  }
  std::_Exit(2);
}

class CrashTest : public manager_test {};

TEST_F(CrashTest, KillNineDuringContainerBuildingReopensAtTheLastAcknowledgedWatermark) {
  std::mt19937_64 rng(20240601);
  std::uint64_t last_steps = 0;
  const std::string tool = PHEAP_TOOL_PATH;
  if (!tool.empty()) {
    ASSERT_TRUE(std::filesystem::exists(tool)) << tool;
  }
  for (int iter = 0; iter < 60; ++iter) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      child_main(path_, fds[1], iter == 0);
    }
    ::close(fds[1]);
    // Wait for the first acknowledgement (the child is running), then kill at a random moment.
    ack a{}, last{};
    bool have = false;
    ASSERT_EQ(::read(fds[0], &a, sizeof a), static_cast<ssize_t>(sizeof a)) << "child died early";
    last = a;
    have = true;
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 40000));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited on its own, status " << status;
    while (::read(fds[0], &a, sizeof a) == static_cast<ssize_t>(sizeof a)) last = a;  // drain acks
    ::close(fds[0]);
    ASSERT_TRUE(have);

    manager m(open_read_only, path_);
    heap_state s{m.find<adj_map>("adj").first, m.find<str_map>("strs").first,
                 m.find<std::uint64_t>("steps").first};
    ASSERT_NE(s.steps, nullptr);
    const std::uint64_t n = *s.steps;
    EXPECT_TRUE(n == last.steps || n == last.steps + flush_every)
        << "iteration " << iter << ": reopened at step " << n << ", last acknowledged " << last.steps;
    EXPECT_GE(m.epoch(), last.epoch);
    EXPECT_LE(m.epoch(), last.epoch + 1);
    EXPECT_GE(n, last_steps) << "went backwards";
    last_steps = n;
    EXPECT_EQ(compare(s, reference(n)), "") << "iteration " << iter;
    const auto problems = m.check();
    EXPECT_TRUE(problems.empty()) << problems.front();
    if (!tool.empty() && iter % 10 == 0) {  // readers share the lock: the tool may open it too
      const std::string cmd = tool + " check " + path_ + " > /dev/null";
      EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    }
    if (HasFailure()) break;
  }
  EXPECT_GT(last_steps, 10 * flush_every) << "children made too little progress to test much";
  std::printf("reached step %llu after 60 kills\n", static_cast<unsigned long long>(last_steps));
}

}  // namespace
