// tools/support/progress.hpp — progress of a long operation (ingest, check, snapshot, export,
// generate), one reporter for both tools.
//
// Styles (choose() picks one from --quiet and whether stderr is a terminal):
//   bar     on a terminal: one line redrawn in place (\r) at most 4 times a second, fitted to
//           the terminal's width:
//             check [##########..........]  52.0%  1.2 GiB/2.3 GiB  310.4 MiB/s  ETA 0:04
//           percent, bar and ETA only when the total is known; the line ends with a newline at
//           finish().
//   lines   not a terminal (a log, a pipe): the same fields as one plain line at most every
//           10 seconds, and one at finish().
//   silent  --quiet: nothing.
// Rate: done / seconds since start (so a resumed job's rate counts this run only: pass the
// amount already done as `start`). ETA: what is left at that rate.
//
// Output goes to the FILE given (stderr in the tools), never to stdout, so that --json output
// stays parseable. Not thread-safe: call it from one thread.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

namespace tool_support {

class progress {
 public:
  enum class style { bar, lines, silent };
  enum class unit { bytes, items };

  // silent with --quiet; bar when stderr is a terminal; else lines.
  static style choose(bool quiet);

  // `what`: the operation ("check", "ingest"); `items`: what is counted when unit::items
  // ("pages", "edges"). `now`: seconds on a monotonic clock (tests pass a fake one).
  progress(style s, std::string what, unit u, std::string items = "", std::FILE* out = stderr,
           std::function<double()> now = {});
  // A bar left unfinished (the operation failed) ends its line, so a message can follow.
  ~progress();
  progress(const progress&) = delete;
  progress& operator=(const progress&) = delete;

  void set_total(std::uint64_t total);  // 0: unknown
  void set_start(std::uint64_t start);  // done before this run (not counted in the rate)
  // Reports `done` (and a short note shown after the numbers); draws when due.
  void update(std::uint64_t done, const std::string& note = "");
  // Draws the final state (bar: then a newline) unless silent. `note` replaces the last one.
  void finish(const std::string& note = "");

  // Ends a bar line drawn so far (the operation failed), so that a message can follow on a line
  // of its own. The destructor does the same.
  void break_line();

  // The fields of one report, as drawn (exposed for tests).
  std::string status_line(int width) const;

 private:
  void draw(bool final);
  std::string amount(double v) const;

  style style_;
  std::string what_, items_;
  unit unit_;
  std::FILE* out_;
  std::function<double()> now_;
  double t0_, last_draw_;  // the first draw comes one interval after the start
  std::uint64_t total_ = 0, start_ = 0, done_ = 0;
  std::string note_;
  bool drew_bar_ = false;
};

}  // namespace tool_support
