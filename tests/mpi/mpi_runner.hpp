// Runs a program under mpirun for the mpi tests: `mpirun --oversubscribe -np N` (plus
// --allow-run-as-root when root) with its own session directory, output to a log, optional
// environment passed to every rank with -x, and the pid of mpirun for kills from outside; or
// as one plain process. mpirun's path comes from CMake (MPIEXEC_EXECUTABLE); when it is
// missing the tests skip — and fail under CI=true.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/test_util.hpp"

namespace pheap::test {

inline const std::string kMpirun = PHEAP_MPIEXEC;

#define PHEAP_REQUIRE_MPIRUN()                                                      \
  do {                                                                              \
    if (!std::filesystem::exists(::pheap::test::kMpirun)) {                         \
      PHEAP_REQUIRE_FEATURE("mpirun (" + ::pheap::test::kMpirun + "): install openmpi-bin"); \
    }                                                                               \
  } while (0)

using env_list = std::vector<std::pair<std::string, std::string>>;

// Starts argv[0] with `argv` (a path, no search); stdout and stderr go to `log`.
inline pid_t spawn_program(std::vector<std::string> argv, const std::string& log) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int in = ::open("/dev/null", O_RDONLY);
    if (out < 0 || in < 0) ::_exit(127);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(out, 2);
    std::vector<char*> a;
    for (auto& s : argv) a.push_back(s.data());
    a.push_back(nullptr);
    ::execv(a[0], a.data());
    ::_exit(127);
  }
  return pid;
}

// A fresh directory beside `log` for one mpirun's session files (orte_tmpdir_base). Open MPI
// 4.x otherwise puts every job of a user in /tmp/ompi.<host>.<uid>, and two mpiruns that start
// at once race to create it: one fails in orte_init with "mkdir ... File exists"
// (open-mpi/ompi#8510), which ctest -j2 hit. The directory is under the test's own temp_dir,
// removed with it; kept short because PMIx puts unix sockets (108-byte paths) below it.
inline std::string mpi_session_base(const std::string& log) {
  std::string tmpl = std::filesystem::path(log).parent_path().string() + "/ompi-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    throw std::runtime_error("mkdtemp " + tmpl + ": " + std::strerror(errno));
  }
  return tmpl;
}

// Starts `program args...` under mpirun with np ranks; stdout and stderr go to `log`.
inline pid_t spawn_mpi(int np, const std::string& program, const std::vector<std::string>& args,
                       const std::string& log, const env_list& env = {}) {
  std::vector<std::string> argv = {kMpirun, "--oversubscribe", "--bind-to", "none", "-np", std::to_string(np),
                                   "--mca", "orte_tmpdir_base", mpi_session_base(log)};
  if (::geteuid() == 0) argv.insert(argv.begin() + 1, "--allow-run-as-root");
  for (const auto& [k, v] : env) argv.insert(argv.end(), {"-x", k + "=" + v});
#if defined(__SANITIZE_ADDRESS__)
  // Under ASan, ranks leak Open MPI's plugins, unloaded before the report so that no
  // suppression can name them (mpi_job.cpp; pheap-graph has no __asan_default_options of its own).
  argv.insert(argv.end(), {"-x", "ASAN_OPTIONS=detect_leaks=0"});
#endif
  argv.push_back(program);
  argv.insert(argv.end(), args.begin(), args.end());
  return spawn_program(std::move(argv), log);
}

inline int wait_status(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

inline std::string slurp(const std::string& file) {
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct job_result {
  int status;
  std::string output;
};

// Runs `program args...` as one plain process (no mpirun).
inline job_result run_program(const std::string& program, std::vector<std::string> args, const std::string& log) {
  args.insert(args.begin(), program);
  const int st = wait_status(spawn_program(std::move(args), log));
  return {st, slurp(log)};
}

// Waits (up to kActorDeadline) for the pid line in the file DIR/RANK a rank writes
// (crash_hooks.hpp, PHEAP_TEST_MPI_PIDS), waits `delay` more, then SIGKILLs that rank. False
// when it was gone, or (a test failure) when the line never appeared.
inline bool kill_rank_after(const std::string& pids, int rank, std::chrono::milliseconds delay) {
  const std::string pidfile = pids + "/" + std::to_string(rank);
  // Its whole line: the rank creates the file, then writes it.
  if (!wait_until([&] { return slurp(pidfile).find('\n') != std::string::npos; },
                  "rank " + std::to_string(rank) + " to write its pid to " + pidfile)) {
    return false;
  }
  std::this_thread::sleep_for(delay);
  return ::kill(static_cast<pid_t>(std::stol(slurp(pidfile))), SIGKILL) == 0;
}

// Empties the pid directory for the next job.
inline void clear_pids(const std::string& pids) {
  for (const auto& f : std::filesystem::directory_iterator(pids)) std::filesystem::remove(f.path());
}

inline job_result run_mpi(int np, const std::string& program, const std::vector<std::string>& args,
                          const std::string& log, const env_list& env = {}) {
  const int st = wait_status(spawn_mpi(np, program, args, log, env));
  return {st, slurp(log)};
}

}  // namespace pheap::test
