#include "support/progress.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "support/cli.hpp"

namespace tool_support {

namespace {

constexpr double kBarInterval = 0.25;   // seconds between redraws on a terminal
constexpr double kLineInterval = 10.0;  // seconds between plain lines

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int terminal_width(std::FILE* f) {
  winsize ws{};
  if (::ioctl(::fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40) return ws.ws_col;
  return 80;
}

std::string clock_text(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const auto t = static_cast<long long>(s + 0.5);
  char b[32];
  if (t >= 3600) std::snprintf(b, sizeof b, "%lld:%02lld:%02lld", t / 3600, t / 60 % 60, t % 60);
  else std::snprintf(b, sizeof b, "%lld:%02lld", t / 60, t % 60);
  return b;
}

}  // namespace

progress::style progress::choose(bool quiet) {
  if (quiet) return style::silent;
  return ::isatty(STDERR_FILENO) ? style::bar : style::lines;
}

progress::progress(style s, std::string what, unit u, std::string items, std::FILE* out,
                   std::function<double()> now)
    : style_(s), what_(std::move(what)), items_(std::move(items)), unit_(u), out_(out),
      now_(now ? std::move(now) : std::function<double()>(steady_seconds)), t0_(now_()),
      last_draw_(t0_) {}

progress::~progress() { break_line(); }

void progress::break_line() {
  if (!drew_bar_) return;
  std::fputc('\n', out_);
  std::fflush(out_);
  drew_bar_ = false;
}

void progress::set_total(std::uint64_t total) { total_ = total; }
void progress::set_start(std::uint64_t start) {
  start_ = start;
  done_ = std::max(done_, start);
}

std::string progress::amount(double v) const {
  if (unit_ == unit::bytes) return human_bytes(static_cast<std::uint64_t>(v));
  return human_count(v);
}

std::string progress::status_line(int width) const {
  const double secs = std::max(1e-9, now_() - t0_);
  const double rate = static_cast<double>(done_ - std::min(done_, start_)) / secs;
  const std::string per = unit_ == unit::bytes ? "/s" : " " + items_ + "/s";
  const std::string of = unit_ == unit::items ? " " + items_ : "";
  std::string head = what_ + " ";
  std::string core;
  if (total_ > 0) {
    const double frac = std::min(1.0, static_cast<double>(done_) / static_cast<double>(total_));
    char pct[16];
    std::snprintf(pct, sizeof pct, "%5.1f%%", 100 * frac);
    core = std::string(" ") + pct + "  " + amount(static_cast<double>(done_)) + "/" +
           amount(static_cast<double>(total_)) + of + "  " + amount(rate) + per + "  ETA " +
           clock_text(rate > 0 ? static_cast<double>(total_ - std::min(done_, total_)) / rate
                               : std::nan(""));
    // The bar: 10 to 40 columns of what the line leaves beside the numbers and the note (the
    // note is cut at the end of the line when there is not room for both).
    const int avail = width - static_cast<int>(head.size() + core.size()) - 3;
    if (avail >= 10) {
      const int n = std::clamp(avail - static_cast<int>(note_.size()) - 2, 10, 40);
      const int full = static_cast<int>(frac * n);
      head += "[" + std::string(static_cast<std::size_t>(full), '#') +
              std::string(static_cast<std::size_t>(n - full), '.') + "]";
    }
  } else {
    core = amount(static_cast<double>(done_)) + of + "  " + amount(rate) + per + "  (total unknown)";
  }
  std::string line = head + core;
  if (!note_.empty()) line += "  " + note_;
  if (width > 0 && static_cast<int>(line.size()) > width) line.resize(static_cast<std::size_t>(width));
  return line;
}

void progress::update(std::uint64_t done, const std::string& note) {
  done_ = done;
  if (!note.empty()) note_ = note;
  if (style_ == style::silent) return;
  const double t = now_();
  if (t - last_draw_ < (style_ == style::bar ? kBarInterval : kLineInterval)) return;
  last_draw_ = t;
  draw(false);
}

void progress::finish(const std::string& note) {
  if (!note.empty()) note_ = note;
  if (style_ == style::silent) return;
  draw(true);
}

void progress::draw(bool final) {
  if (style_ == style::bar) {
    const int w = terminal_width(out_);
    const std::string l = status_line(w - 1);
    std::fprintf(out_, "\r%-*s%s", w - 1, l.c_str(), final ? "\n" : "");
    drew_bar_ = !final;
  } else {
    std::fprintf(out_, "%s%s\n", status_line(0).c_str(), final ? " (done)" : "");
  }
  std::fflush(out_);
}

}  // namespace tool_support
