// Driving the command-line tools from tests: run one with its stdout and stderr captured apart
// (run_child, tests/reliability/reliability_util.hpp) or on a pseudo-terminal (run_on_pty, for
// what the tools draw only on a terminal: progress bars, clipped tables); parse --json output.
#pragma once

#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "reliability/reliability_util.hpp"

namespace pheap::test {

// Runs argv on a fresh pseudo-terminal of `cols` columns; returns everything it wrote (stdout
// and stderr both go to the terminal) and its wait status.
inline child_result run_on_pty(const std::vector<std::string>& argv, unsigned short cols = 100) {
  winsize ws{};
  ws.ws_col = cols;
  ws.ws_row = 40;
  int master = -1;
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, &ws);
  if (pid < 0) throw std::runtime_error("forkpty failed");
  if (pid == 0) {
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    ::execv(a[0], a.data());
    ::_exit(127);
  }
  child_result r;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n <= 0) break;  // EIO once the child closed the terminal
    r.out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(master);
  ::waitpid(pid, &r.status, 0);
  return r;
}

// The JSON document a tool printed, or a null value (with the parse error in `why`).
inline nlohmann::json parse_json(const std::string& text, std::string* why = nullptr) {
  try {
    return nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return nullptr;
  }
}

// Lines of `text` (without their '\n').
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> v;
  std::size_t p = 0;
  while (p < text.size()) {
    const std::size_t nl = text.find('\n', p);
    v.push_back(text.substr(p, nl == std::string::npos ? std::string::npos : nl - p));
    if (nl == std::string::npos) break;
    p = nl + 1;
  }
  return v;
}

}  // namespace pheap::test
