// Driving the command-line tools from tests: run one with its stdout and stderr captured apart
// (run_child, tests/reliability/reliability_util.hpp) or on a pseudo-terminal (run_on_pty, for
// what the tools draw only on a terminal: progress bars, clipped tables); parse --json output.
#pragma once

#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
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

// The option lines of a CLI11 --help text (sections "Positionals:" and "Options:").
inline std::vector<std::string> option_lines(const std::string& help) {
  std::vector<std::string> v;
  bool in = false;
  for (const auto& l : lines_of(help)) {
    if (l == "Options:" || l == "Positionals:") {
      in = true;
    } else if (l.empty() || l.back() == ':') {
      in = false;
    } else if (in && l.rfind("  ", 0) == 0) {
      v.push_back(l);
    }
  }
  return v;
}

// `tool --help` and `tool COMMAND --help` for every command: exit 0, the usage line, the exit
// codes and the number rules, and an explanation after every option (CLI11 puts it in the
// column after the option's name, or on the next line when the name is longer).
inline void expect_help_explains_every_option(const std::string& bin, const std::string& tool,
                                              const std::vector<std::string>& commands) {
  std::vector<std::string> cmds{""};
  cmds.insert(cmds.end(), commands.begin(), commands.end());
  for (const auto& c : cmds) {
    std::vector<std::string> argv{bin};
    if (!c.empty()) argv.push_back(c);
    argv.push_back("--help");
    const auto r = run_child(argv);
    const std::string name = c.empty() ? tool : tool + " " + c;
    ASSERT_TRUE(r.exited(0)) << name << ": " << r.describe();
    EXPECT_NE(r.out.find("Usage: " + name), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("Exit status: 0 success"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("powers of 1024"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("powers of 1000"), std::string::npos) << r.out;
    const auto opts = option_lines(r.out);
    EXPECT_FALSE(opts.empty()) << r.out;
    for (std::size_t i = 0; i < opts.size(); ++i) {
      const std::string& l = opts[i];
      const bool explained_here = l.size() > 30 && l.substr(30).find_first_not_of(' ') != std::string::npos;
      const bool explained_below = i + 1 < opts.size() && opts[i + 1].rfind(std::string(30, ' '), 0) == 0;
      const bool is_explanation = l.rfind(std::string(30, ' '), 0) == 0;
      EXPECT_TRUE(explained_here || explained_below || is_explanation)
          << name << ": option without an explanation: '" << l << "'";
    }
  }
}

}  // namespace pheap::test
