// Helpers shared by all test suites.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "pheap/error.hpp"

namespace pheap::test {

// True when running under CI (CI=true): kernel features that tests need must then be present,
// so a missing feature fails the test instead of skipping it.
bool in_ci();

// True in ASan and TSan builds, where each access, allocation and process start costs several
// times more. Long campaigns run a fraction of their iterations there (`sanitized_or`); the
// release stage of scripts/test.sh runs them in full. Never a reason to skip.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
// `full` in a plain build, `sanitized` in an ASan or TSan build.
template <class T>
constexpr T sanitized_or(T full, T sanitized) {
  return kSanitized ? sanitized : full;
}

// How long a test waits for a background actor (the evictor, the fault workers, a flusher, a
// sampler, a thread, a child process) to do what the test then asserts on: only a hang misses
// it, however loaded the machine (the suite runs two tests at a time on two cores).
inline constexpr std::chrono::seconds kActorDeadline{60};

// Polls `done` (every millisecond) until it returns true, or `deadline` passes: whether it did.
// A test that waits for an actor waits for the event itself this way (a counter reaching a
// value, a stats field changing, a condition, a file appearing), never for a fixed time, which
// a loaded machine overruns. Reports nothing: for forked children, which report by their exit
// status; a test's own thread uses wait_until.
template <class Pred>
bool eventually(Pred&& done, std::chrono::milliseconds deadline = kActorDeadline) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return static_cast<bool>(done());
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// `eventually`, and a test failure naming `what` (the event that did not happen) at the deadline.
template <class Pred>
bool wait_until(Pred&& done, const std::string& what,
                std::chrono::milliseconds deadline = kActorDeadline) {
  if (eventually(done, deadline)) return true;
  ADD_FAILURE() << "waited " << deadline.count() << " ms for " << what << ": it did not happen";
  return false;
}

// Skips the current test outside CI, fails it inside CI. Use as:
//   if (!feature) { PHEAP_REQUIRE_FEATURE("userfaultfd: " + why); }
#define PHEAP_REQUIRE_FEATURE(why)                                         \
  do {                                                                     \
    if (::pheap::test::in_ci()) {                                          \
      FAIL() << "required kernel feature missing in CI: " << (why);        \
    } else {                                                               \
      GTEST_SKIP() << "kernel feature missing (would fail in CI): " << (why); \
    }                                                                      \
  } while (0)

// A fresh empty directory under $TMPDIR (default /tmp), removed with its contents when the
// object is destroyed (unless PHEAP_KEEP_TEST_DIRS is set, for post-mortems).
class temp_dir {
 public:
  temp_dir();
  ~temp_dir();
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Deterministic page content: every byte depends on (seed, page, version), so a page read back
// can be checked against what was written without keeping a copy.
void fill_pattern(void* buf, std::size_t len, std::uint64_t seed, std::uint64_t page,
                  std::uint64_t version);
std::vector<std::uint8_t> pattern(std::size_t len, std::uint64_t seed, std::uint64_t page,
                                  std::uint64_t version);

// The code of the pheap::error that `f` throws; a test failure when it throws none.
template <class F>
errc code_of(F&& f) {
  try {
    f();
  } catch (const error& e) {
    return e.code();
  }
  ADD_FAILURE() << "expected a pheap::error";
  return errc::io;
}

// Runs `body` in a forked child and waits for it. Returns the child's exit status, or 128 + the
// signal that ended it (the shell's convention). `body` returns the exit status (an int) or
// nothing (0); an exception escaping it is printed to stderr ("child: ...") and exits 125. The
// child leaves with std::_Exit: no destructors or atexit handlers of the parent's copies run.
template <class F>
int run_in_child(F&& body) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ADD_FAILURE() << "fork: " << std::strerror(errno);
    return -1;
  }
  if (pid == 0) {
    int rc = 0;
    try {
      if constexpr (std::is_void_v<std::invoke_result_t<F&>>) {
        body();
      } else {
        rc = body();
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
      rc = 125;
    } catch (...) {
      std::fprintf(stderr, "child: unknown exception\n");
      rc = 125;
    }
    std::_Exit(rc);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      ADD_FAILURE() << "waitpid: " << std::strerror(errno);
      return -1;
    }
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// run_in_child with the child's stderr captured (in a temporary file, so a chatty child never
// blocks on a full pipe): the status as run_in_child gives it, and what the child wrote.
struct child_outcome {
  int status = -1;
  std::string err;
};
template <class F>
child_outcome run_in_child_capturing_stderr(F&& body) {
  std::FILE* tmp = std::tmpfile();
  if (tmp == nullptr) {
    ADD_FAILURE() << "tmpfile: " << std::strerror(errno);
    return {};
  }
  child_outcome out;
  out.status = run_in_child([&]() -> decltype(auto) {
    ::dup2(::fileno(tmp), STDERR_FILENO);
    return body();
  });
  std::rewind(tmp);
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, tmp)) > 0;) out.err.append(buf, n);
  std::fclose(tmp);
  return out;
}

// Path of a helper binary built next to the running test binary (for crash tests that fork
// and exec a child).
std::string sibling_binary(const std::string& name);

}  // namespace pheap::test
