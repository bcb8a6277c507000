// Fault streams and read-ahead windows (rules R1-R4 in read_ahead.hpp).
#include "pager/read_ahead.hpp"

#include <algorithm>

namespace pheap::paging {

void read_ahead::configure(std::size_t region_pages, std::size_t ceiling) noexcept {
  std::lock_guard lk(mu_);
  region_pages_ = region_pages;
  ceiling_ = std::min(ceiling, region_pages);
  s_ = {};
  recent_ = {};
  seen_ = 0;
  round_first_ = round_followed_ = sample_ = 0;
  shut_ = false;
  c_ = {};
}

std::size_t read_ahead::index_in(const read_window& w, std::size_t page) noexcept {
  const std::ptrdiff_t d = static_cast<std::ptrdiff_t>(page) - static_cast<std::ptrdiff_t>(w.start);
  if (w.stride == 0 || d % w.stride != 0) return read_window::npos;
  const std::ptrdiff_t i = d / w.stride;
  if (i < 0 || static_cast<std::size_t>(i) >= w.pages) return read_window::npos;
  return static_cast<std::size_t>(i);
}

std::optional<read_window> read_ahead::plan(stream& s, std::ptrdiff_t start, std::size_t pages) {
  s.window = false;
  s.counted = 0;
  const auto n = static_cast<std::ptrdiff_t>(region_pages_);
  if (start < 0 || start >= n) return std::nullopt;
  // Clip to the region: the last page start + (pages − 1)·stride must lie in [0, n).
  const std::ptrdiff_t room = s.stride > 0 ? (n - 1 - start) / s.stride : start / -s.stride;
  pages = std::min<std::size_t>(pages, static_cast<std::size_t>(room) + 1);
  if (pages == 0) return std::nullopt;
  read_window w;
  w.start = static_cast<std::size_t>(start);
  w.stride = s.stride;
  w.pages = pages;
  w.marker = pages >= kMinMarked ? pages / 2 : read_window::npos;
  s.w = w;
  s.window = true;
  s.strays = 0;
  ++c_.windows;
  c_.planned += pages - (w.marker != read_window::npos ? 1 : 0);
  return w;
}

void read_ahead::pass(stream& s, std::size_t upto) {
  // Read-ahead pages of s.w before index `upto` (the marker is not one).
  std::size_t n = upto;
  if (s.w.marker != read_window::npos && s.w.marker < upto) --n;
  if (n > s.counted) {
    c_.passed += n - s.counted;
    s.counted = n;
  }
}

bool read_ahead::gate_allows() {
  if (round_first_ >= kGateRound) {
    shut_ = round_followed_ * 4 < round_first_;
    round_first_ = round_followed_ = 0;
  }
  if (shut_ && ++sample_ % kGateSample != 0) {
    ++c_.gated;
    return false;
  }
  ++round_first_;
  return true;
}

std::optional<read_window> read_ahead::on_fault(std::size_t page, std::uint32_t tid) {
  if (ceiling_ == 0) return std::nullopt;
  std::lock_guard lk(mu_);
  const std::uint64_t now = ++tick_;
  const auto p = static_cast<std::ptrdiff_t>(page);

  for (stream& s : s_) {
    if (s.used && s.window && now - s.tick > kExpirePerPage * s.w.pages) {
      s.window = false;  // expired: not followed in time
      s.first = false;
    }
  }
  for (stream& s : s_) {
    if (!s.used || !s.window) continue;
    const std::size_t i = index_in(s.w, page);
    const std::ptrdiff_t after = static_cast<std::ptrdiff_t>(s.w.start) +
                                 static_cast<std::ptrdiff_t>(s.w.pages) * s.w.stride;
    const bool at_marker = i != read_window::npos && i == s.w.marker;
    if (!at_marker && p != after) {
      if (i != read_window::npos) return std::nullopt;  // inside a window: not a new stream
      continue;
    }
    // R1: followed. The pages before the fault were passed, the previous window's tail too.
    if (s.first) {
      s.first = false;
      ++round_followed_;
    }
    c_.passed += s.tail;
    s.tail = 0;
    const std::size_t read = s.w.pages - (s.w.marker != read_window::npos ? 1 : 0);
    if (at_marker) {
      pass(s, i);
      s.tail = read - s.counted;  // the half still ahead: passed at the next follow
    } else {
      pass(s, s.w.pages);
    }
    s.last = page;
    s.tick = now;
    ++s.run;
    const std::size_t pages = std::min(ceiling_, 2 * s.w.pages);
    return plan(s, at_marker ? after : p + s.w.stride, pages);
  }
  // Followed no window, inside none: a stray of its thread's windows (expiry).
  if (tid != 0) {
    for (stream& s : s_) {
      if (s.used && s.window && s.tid == tid && ++s.strays > kExpireStrays) {
        s.window = false;
        s.first = false;
      }
    }
  }

  for (stream& s : s_) {
    if (!s.used || s.stride == 0 || !same_thread(s.tid, tid) ||
        p != static_cast<std::ptrdiff_t>(s.last) + s.stride) {
      continue;
    }
    // R2: the run grows; at kTrigger faults the first window, if the gate lets it.
    s.last = page;
    s.tick = now;
    if (++s.run < kTrigger || s.window || !gate_allows()) return std::nullopt;
    auto w = plan(s, p + s.stride, std::min(ceiling_, kFirstWindow));
    s.first = w.has_value();
    return w;
  }

  // R3: a recent fault a step away starts a stream with that stride.
  const std::size_t known = std::min(seen_, kRecent);
  std::size_t mine = 0;
  for (std::size_t k = 1; k <= known && mine < kSameThread; ++k) {  // the most recent first
    const recent_fault& r = recent_[(seen_ - k) % kRecent];
    if (!same_thread(r.tid, tid)) continue;
    ++mine;
    const std::ptrdiff_t d = p - static_cast<std::ptrdiff_t>(r.page);
    if (d == 0 || d > kMaxStride || d < -kMaxStride) continue;
    stream* victim = nullptr;
    for (stream& s : s_) {
      if (!s.used) {
        victim = &s;
        break;
      }
      if (s.window) continue;
      if (victim == nullptr || s.tick < victim->tick) victim = &s;
    }
    if (victim == nullptr) {
      victim = &s_[0];
      for (stream& s : s_) {
        if (s.tick < victim->tick) victim = &s;
      }
    }
    *victim = stream{};
    victim->used = true;
    victim->tid = tid;
    victim->last = page;
    victim->stride = d;
    victim->run = 2;
    victim->tick = now;
    return std::nullopt;
  }

  // R4: remembered.
  recent_[seen_ % kRecent] = {page, tid};
  ++seen_;
  return std::nullopt;
}

read_ahead::counts read_ahead::totals() const {
  std::lock_guard lk(mu_);
  return c_;
}

}  // namespace pheap::paging
