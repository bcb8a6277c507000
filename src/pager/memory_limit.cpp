// The memory this process may use (see memory_limit.hpp for the sources).
#include "pager/memory_limit.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "pager/os/files.hpp"

namespace pheap::paging {

namespace {

constexpr std::uint64_t kNoLimit = ~std::uint64_t(0);

// A number file of the cgroup interface: "max" (v2) or absent → kNoLimit.
std::uint64_t number_file(const std::string& path) {
  const std::string s = os::read_small_file(path);
  if (s.empty() || s.rfind("max", 0) == 0) return kNoLimit;
  return std::strtoull(s.c_str(), nullptr, 10);
}

// Value of `key` in a "key value" file such as memory.stat (0 when absent).
std::uint64_t stat_value(const std::string& text, const std::string& key) {
  std::size_t at = 0;
  while ((at = text.find(key, at)) != std::string::npos) {
    const bool line_start = at == 0 || text[at - 1] == '\n';
    if (line_start && at + key.size() < text.size() && text[at + key.size()] == ' ') {
      return std::strtoull(text.c_str() + at + key.size() + 1, nullptr, 10);
    }
    at += key.size();
  }
  return 0;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (const char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

struct mount_point {
  std::string dir, root;  // where it is mounted, which cgroup directory is mounted there
};

// The mount of the cgroup2 hierarchy (`v2`) or of the v1 hierarchy holding the memory
// controller, from /proc/self/mountinfo; dir is "" when there is none.
mount_point find_mount(bool v2) {
  std::istringstream in(os::read_small_file("/proc/self/mountinfo"));
  for (std::string line; std::getline(in, line);) {
    const std::size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    const std::vector<std::string> pre = split(line.substr(0, dash), ' ');
    const std::vector<std::string> post = split(line.substr(dash + 3), ' ');
    if (pre.size() < 5 || post.size() < 3) continue;
    if (v2 && post[0] == "cgroup2") return {pre[4], pre[3]};
    if (!v2 && post[0] == "cgroup") {
      for (const auto& o : split(post[2], ',')) {
        if (o == "memory") return {pre[4], pre[3]};
      }
    }
  }
  return {};
}

// The directory of cgroup `path` (from /proc/self/cgroup) under mount `m`.
std::string cgroup_dir(const mount_point& m, const std::string& path) {
  std::string rel = path;
  if (m.root != "/" && rel.rfind(m.root, 0) == 0) rel = rel.substr(m.root.size());
  if (rel == "/") rel.clear();
  return m.dir + rel;
}

std::uint64_t ram_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long psz = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || psz <= 0) return std::uint64_t(4) << 30;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(psz);
}

}  // namespace

memory_limit memory_limit::detect() {
  memory_limit m;
  m.ram_ = ram_bytes();
  std::string v1_path, v2_path;
  bool have_v2 = false;
  std::istringstream in(os::read_small_file("/proc/self/cgroup"));
  for (std::string line; std::getline(in, line);) {
    const std::size_t a = line.find(':');
    const std::size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string id = line.substr(0, a), ctl = line.substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    if (id == "0" && ctl.empty()) {
      v2_path = path;
      have_v2 = true;
    }
    for (const auto& c : split(ctl, ',')) {
      if (c == "memory") v1_path = path;
    }
  }
  if (have_v2) {
    const mount_point mp = find_mount(true);
    const std::string dir = mp.dir.empty() ? "" : cgroup_dir(mp, v2_path);
    if (!dir.empty() && os::file_exists(dir + "/memory.current")) {
      m.kind_ = kind::cgroup_v2;
      m.dir_ = dir;
      m.root_ = mp.dir;
    }
  }
  if (m.kind_ == kind::ram && !v1_path.empty()) {
    const mount_point mp = find_mount(false);
    const std::string dir = mp.dir.empty() ? "" : cgroup_dir(mp, v1_path);
    if (!dir.empty() && os::file_exists(dir + "/memory.limit_in_bytes")) {
      m.kind_ = kind::cgroup_v1;
      m.dir_ = dir;
      m.root_ = mp.dir;
    }
  }
  // A cgroup that does not limit below physical RAM is no source: RAM is.
  if (m.kind_ != kind::ram && m.sample().limit >= m.ram_) m.kind_ = kind::ram;
  return m;
}

std::string memory_limit::name() const {
  switch (kind_) {
    case kind::cgroup_v2: return "cgroup v2 " + dir_;
    case kind::cgroup_v1: return "cgroup v1 " + dir_;
    case kind::ram: break;
  }
  return "RAM";
}

memory_sample memory_limit::sample() const {
  memory_sample s;
  if (kind_ == kind::ram) {
    s.limit = ram_ / 4;
    // statm: size resident shared ... (pages); anonymous resident = resident − shared.
    const std::vector<std::string> f = split(os::read_small_file("/proc/self/statm"), ' ');
    if (f.size() >= 3) {
      const std::uint64_t res = std::strtoull(f[1].c_str(), nullptr, 10);
      const std::uint64_t shr = std::strtoull(f[2].c_str(), nullptr, 10);
      s.used = (res > shr ? res - shr : 0) * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    }
    return s;
  }
  std::uint64_t limit = kNoLimit, usage = 0, reclaimable = 0;
  if (kind_ == kind::cgroup_v2) {
    // Every ancestor's limit applies too; the hierarchy's root has none.
    for (std::string d = dir_; d.size() > root_.size(); d = d.substr(0, d.rfind('/'))) {
      limit = std::min({limit, number_file(d + "/memory.max"), number_file(d + "/memory.high")});
    }
    usage = number_file(dir_ + "/memory.current");
    const std::string st = os::read_small_file(dir_ + "/memory.stat");
    const std::uint64_t file = stat_value(st, "inactive_file") + stat_value(st, "active_file");
    const std::uint64_t busy = stat_value(st, "file_dirty") + stat_value(st, "file_writeback");
    reclaimable = file > busy ? file - busy : 0;
  } else {
    const std::string st = os::read_small_file(dir_ + "/memory.stat");
    limit = std::min(number_file(dir_ + "/memory.limit_in_bytes"),
                     st.find("hierarchical_memory_limit") != std::string::npos
                         ? stat_value(st, "hierarchical_memory_limit")
                         : kNoLimit);
    usage = number_file(dir_ + "/memory.usage_in_bytes");
    const std::uint64_t file =
        stat_value(st, "total_inactive_file") + stat_value(st, "total_active_file");
    const std::uint64_t busy = stat_value(st, "total_dirty") + stat_value(st, "total_writeback");
    reclaimable = file > busy ? file - busy : 0;
  }
  if (usage == kNoLimit) usage = 0;
  s.limit = std::min(limit, ram_);
  s.used = usage > reclaimable ? usage - reclaimable : 0;
  return s;
}

std::size_t limit_follower::operator()(std::size_t resident_pages, std::uint64_t beside_bytes,
                                       std::chrono::steady_clock::time_point now) {
  const memory_sample s = sample_();
  const std::uint64_t mine = std::uint64_t(resident_pages) * ps_ + beside_bytes;
  const std::uint64_t rest = s.used > mine ? s.used - mine : 0;
  if (sampled_) {
    const double dt = std::chrono::duration<double>(now - prev_time_).count();
    burst_ *= std::exp2(-std::max(0.0, dt) / static_cast<double>(kBurstHalfLife.count()));
    const bool near_limit = prev_used_ + s.limit / 8 >= s.limit;
    if (near_limit && rest > prev_rest_) burst_ = std::max(burst_, static_cast<double>(rest - prev_rest_));
  }
  sampled_ = true;
  prev_rest_ = rest;
  prev_used_ = s.used;
  prev_time_ = now;
  const auto burst = static_cast<std::uint64_t>(burst_);
  const std::uint64_t reserve = std::max(reserve_, std::min(2 * burst, s.limit / 8));
  last_limit_.store(s.limit, std::memory_order_relaxed);
  last_rest_.store(rest, std::memory_order_relaxed);
  last_reserve_.store(reserve, std::memory_order_relaxed);
  last_burst_.store(burst, std::memory_order_relaxed);
  const std::uint64_t taken = rest + reserve;
  const std::uint64_t cap = s.limit > taken ? s.limit - taken : 0;
  last_cap_.store(cap, std::memory_order_relaxed);
  last_beside_.store(beside_bytes, std::memory_order_relaxed);
  return cap > beside_bytes ? static_cast<std::size_t>((cap - beside_bytes) / per_page_) : 0;
}

std::string limit_follower::describe() const {
  auto m = [](const std::atomic<std::uint64_t>& v) {
    return static_cast<double>(v.load(std::memory_order_relaxed)) / (1 << 20);
  };
  char b[224];
  std::snprintf(b, sizeof b,
                ": limit %.1f MiB, rest of the process %.1f MiB, reserve %.1f MiB (bursts up to %.1f MiB)",
                m(last_limit_), m(last_rest_), m(last_reserve_), m(last_burst_));
  std::string d = "follows " + name_ + b;
  if (last_beside_.load(std::memory_order_relaxed) != 0) {
    std::snprintf(b, sizeof b, ", pooled beside the buffer %.1f MiB", m(last_beside_));
    d += b;
  }
  return d;
}

}  // namespace pheap::paging
