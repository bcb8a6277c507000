// Helpers of the reliability campaigns (tests/reliability): running child processes with an
// environment and capturing their output, copying datastores, campaign sizing (CI vs
// PHEAP_LONG=1) and the machine-readable summary line scripts/reliability.sh collects:
//
//   PHEAP_RESULT scenario=<name> iterations=<n> failures=<n> data_lost=<n> seconds=<s>
//
// "failures" counts iterations whose outcome broke the promise (wrong error, unopenable
// datastore, wrong content); "data_lost" counts iterations where an acknowledged watermark was
// not there after the crash (a subset of failures; must be 0).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace pheap::test {

// PHEAP_LONG=1: the on-demand long campaigns.
inline bool long_mode() {
  const char* v = std::getenv("PHEAP_LONG");
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

class scenario_timer {
 public:
  scenario_timer() : t0_(std::chrono::steady_clock::now()) {}
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }

 private:
  std::chrono::steady_clock::time_point t0_;
};

inline void print_result(const std::string& scenario, std::uint64_t iterations,
                         std::uint64_t failures, std::uint64_t data_lost, double seconds) {
  std::printf("PHEAP_RESULT scenario=%s iterations=%llu failures=%llu data_lost=%llu "
              "seconds=%.1f\n",
              scenario.c_str(), static_cast<unsigned long long>(iterations),
              static_cast<unsigned long long>(failures),
              static_cast<unsigned long long>(data_lost), seconds);
  std::fflush(stdout);
}

struct child_result {
  int status = 0;       // raw wait status
  std::string out;      // stdout
  std::string err;      // stderr
  bool exited(int code) const { return WIFEXITED(status) && WEXITSTATUS(status) == code; }
  bool killed() const { return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL; }
  std::string describe() const {
    std::string s = WIFEXITED(status)     ? "exit " + std::to_string(WEXITSTATUS(status))
                    : WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                          : "status " + std::to_string(status);
    if (!err.empty()) s += "; stderr: " + err.substr(0, 2000);
    return s;
  }
};

// A running child with stdout/stderr captured through pipes.
class child_process {
 public:
  // `env`: extra NAME=VALUE entries (PHEAP_FAULT_CRASH_AT=...); the rest is inherited.
  child_process(const std::vector<std::string>& argv, const std::vector<std::string>& env = {}) {
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
      throw std::runtime_error("pipe2 failed");
    }
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      ::dup2(out[1], STDOUT_FILENO);
      ::dup2(err[1], STDERR_FILENO);
      for (const auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    ::close(out[1]);
    ::close(err[1]);
    out_ = out[0];
    err_ = err[0];
  }
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;
  ~child_process() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      int st;
      ::waitpid(pid_, &st, 0);
    }
    if (out_ >= 0) ::close(out_);
    if (err_ >= 0) ::close(err_);
  }

  pid_t pid() const { return pid_; }
  int stdout_fd() const { return out_; }

  // Reads stdout until the next '\n' (or EOF: nullopt). Blocking.
  std::optional<std::string> read_line() {
    for (;;) {
      const auto nl = pending_.find('\n');
      if (nl != std::string::npos) {
        std::string line = pending_.substr(0, nl);
        consumed_ += pending_.substr(0, nl + 1);
        pending_.erase(0, nl + 1);
        return line;
      }
      char buf[4096];
      const ssize_t n = ::read(out_, buf, sizeof buf);
      if (n <= 0) return std::nullopt;
      pending_.append(buf, static_cast<std::size_t>(n));
    }
  }

  void kill9() { ::kill(pid_, SIGKILL); }

  // Waits for exit and drains both pipes.
  child_result wait() {
    child_result r;
    r.out = consumed_ + pending_ + drain(out_);
    r.err = drain(err_);
    ::waitpid(pid_, &r.status, 0);
    reaped_ = true;
    return r;
  }

 private:
  static std::string drain(int fd) {
    std::string s;
    char buf[4096];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) s.append(buf, static_cast<std::size_t>(n));
    return s;
  }

  pid_t pid_ = -1;
  int out_ = -1, err_ = -1;
  bool reaped_ = false;
  std::string pending_, consumed_;
};

inline child_result run_child(const std::vector<std::string>& argv,
                              const std::vector<std::string>& env = {}) {
  child_process c(argv, env);
  return c.wait();
}

// A fresh directory removed with its contents on destruction, under `base` — by default the
// tmpfs /dev/shm when it exists: the process-crash sweeps run thousands of short children
// whose every commit costs fsyncs, and a process crash (unlike a power cut) does not depend
// on the medium, since everything written is in the page cache either way.
inline std::string scratch_base() {
  const char* env = std::getenv("PHEAP_RELIABILITY_TMPDIR");
  if (env != nullptr && *env != '\0') return env;
  if (::access("/dev/shm", W_OK) == 0) return "/dev/shm";
  const char* t = std::getenv("TMPDIR");
  return t != nullptr && *t != '\0' ? t : "/tmp";
}

class scratch_dir {
 public:
  explicit scratch_dir(const std::string& base = scratch_base()) {
    std::string tmpl = base + "/pheap-rel-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
      throw std::runtime_error("mkdtemp " + tmpl + ": " + std::strerror(errno));
    }
    path_ = tmpl;
  }
  ~scratch_dir() {
    if (std::getenv("PHEAP_KEEP_TEST_DIRS") != nullptr) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Lines of `text` starting with `prefix` (prefix stripped); only complete lines count.
inline std::vector<std::string> lines_with(const std::string& text, const std::string& prefix) {
  std::vector<std::string> v;
  std::size_t pos = 0;
  for (;;) {
    const auto nl = text.find('\n', pos);
    if (nl == std::string::npos) break;
    const std::string line = text.substr(pos, nl - pos);
    if (line.rfind(prefix, 0) == 0) v.push_back(line.substr(prefix.size()));
    pos = nl + 1;
  }
  return v;
}

// Copies a datastore directory (regular files only: pheap.super, pheap.map, segments).
inline void copy_dir(const std::string& from, const std::string& to) {
  namespace fs = std::filesystem;
  fs::create_directories(to);
  for (const auto& e : fs::directory_iterator(from)) {
    if (e.is_regular_file()) fs::copy_file(e.path(), fs::path(to) / e.path().filename());
  }
}

}  // namespace pheap::test
