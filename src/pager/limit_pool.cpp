// The pool of the automatic buffers that follow one memory limit (limit_pool.hpp, P1-P4).
#include "pager/limit_pool.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>

#include "pager/os/files.hpp"

namespace pheap::paging {

// The pool's words. All zero is an empty pool with no cap yet, so a fresh (zero-filled) shared
// file needs no initialisation; `magic` tells a file of another layout, which is not used.
struct limit_pool::state {
  static constexpr std::uint32_t kMagic = 0x70504c31;  // "pPL1"
  std::atomic<std::uint32_t> magic;
  std::atomic<std::int32_t> refused_member;
  std::atomic<std::int64_t> held;
  std::atomic<std::int64_t> cap_plus_one;  // 0: no sample yet (unbounded)
  std::atomic<std::int64_t> refused_ns;    // CLOCK_MONOTONIC (system-wide) of the last refusal
  struct slot {
    std::atomic<std::int32_t> pid;    // 0: free
    std::atomic<std::uint64_t> start; // the process's start time (/proc/PID/stat): pid reuse
    std::atomic<std::int64_t> held;
  } slots[kSlots];
};
static_assert(std::atomic<std::int64_t>::is_always_lock_free &&
                  std::atomic<std::uint64_t>::is_always_lock_free &&
                  std::atomic<std::int32_t>::is_always_lock_free,
              "the shared pool needs address-free atomics");

namespace {

std::int64_t ns_of(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// State and start time of a process from /proc/PID/stat; false when it is gone.
bool process_stat(int pid, char& state, std::uint64_t& start) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return false;
  const auto close = line.rfind(')');  // the command may contain spaces and parentheses
  if (close == std::string::npos) return false;
  std::istringstream rest(line.substr(close + 2));
  rest >> state;
  std::string skip;
  for (int field = 4; field < 22; ++field) rest >> skip;
  rest >> start;
  return static_cast<bool>(rest);
}

// This process's start time (read per call: a child forked after the parent joined has its
// own, and a slot that carried the parent's would look like a reused pid and be reaped live).
std::uint64_t own_start() {
  char st;
  std::uint64_t start = 0;
  (void)process_stat(static_cast<int>(::getpid()), st, start);
  return start;
}

bool alive(int pid, std::uint64_t start) {
  if (pid == static_cast<int>(::getpid())) return true;
  char st = 0;
  std::uint64_t s = 0;
  if (!process_stat(pid, st, s)) return false;
  return st != 'Z' && st != 'X' && s == start;
}

struct flock_guard {
  int fd;
  explicit flock_guard(int f) : fd(f) {
    if (fd >= 0) os::file_lock(fd);
  }
  ~flock_guard() {
    if (fd >= 0) os::file_unlock(fd);
  }
};

// Opens (creating) the shared file and maps it; -1 when it cannot be used.
int open_shared(const std::string& path, limit_pool::state*& s) {
  void* m = nullptr;
  const int fd = os::shared_file_open(path, sizeof(limit_pool::state), true, &m);
  if (fd < 0) return -1;
  s = static_cast<limit_pool::state*>(m);
  {
    flock_guard lk(fd);
    std::uint32_t zero = 0;
    (void)s->magic.compare_exchange_strong(zero, limit_pool::state::kMagic);
  }
  if (s->magic.load() != limit_pool::state::kMagic) {
    os::shared_file_close(fd, m, sizeof(limit_pool::state));
    return -1;
  }
  return fd;
}

// "pheap-pool-<uid>-": the names of this user's pool files.
std::string own_prefix() { return "pheap-pool-" + std::to_string(::geteuid()) + "-"; }

}  // namespace

limit_pool::limit_pool() : s_(new state{}) {}

int limit_pool::remove_abandoned(const std::string& dir) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec), end;
  const std::string prefix = own_prefix();
  int removed = 0;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    void* m = nullptr;
    const int fd = os::shared_file_open(it->path(), sizeof(state), false, &m);
    if (fd < 0) continue;
    // Under the flock a joiner or leaver is not between its check and its slot (join, leave);
    // one that holds it is alive, and the file is left to it.
    if (os::file_try_lock(fd)) {
      const auto* s = static_cast<const state*>(m);
      bool abandoned = os::file_linked(fd) && s->magic.load() == state::kMagic;
      for (const state::slot& sl : s->slots) {
        const std::int32_t pid = sl.pid.load();
        if (!abandoned) break;
        abandoned = pid == 0 || (pid > 0 && !alive(pid, sl.start.load()));  // -1: being reaped
      }
      if (abandoned && os::remove_file(it->path())) ++removed;
      os::file_unlock(fd);
    }
    os::shared_file_close(fd, m, sizeof(state));
  }
  return removed;
}

limit_pool::limit_pool(int fd, state* s, std::string path) : s_(s), fd_(fd), path_(std::move(path)) {}

limit_pool::~limit_pool() {
  if (fd_ < 0) {
    delete s_.load();
    return;
  }
  old_.emplace_back(s_.load(), fd_);
  for (auto [s, fd] : old_) os::shared_file_close(fd, s, sizeof(state));
}

bool limit_pool::replace_if_unlinked() {
  if (fd_ < 0 || os::file_linked(fd_)) return false;
  state* s = nullptr;
  const int fd = open_shared(path_, s);
  if (fd < 0) return false;  // stay in the unlinked one: a pool of this process's own
  old_.emplace_back(s_.load(), fd_);
  s_.store(s, std::memory_order_release);
  fd_ = fd;
  return true;
}

std::shared_ptr<limit_pool> limit_pool::of(const std::string& limit_name, bool across_processes) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<limit_pool>> pools;
  std::lock_guard lk(mu);
  for (auto it = pools.begin(); it != pools.end();) {  // forget the pools no one holds
    it = it->second.expired() ? pools.erase(it) : std::next(it);
  }
  const std::string key = (across_processes ? "shared " : "own ") + limit_name;
  std::weak_ptr<limit_pool>& w = pools[key];
  std::shared_ptr<limit_pool> p = w.lock();
  if (p) return p;
  if (across_processes) {
    static bool swept = false;  // P5, once per process (under mu)
    if (!swept) {
      swept = true;
      (void)remove_abandoned();
    }
    char name[96];
    std::snprintf(name, sizeof name, "/dev/shm/pheap-pool-%u-%016zx", static_cast<unsigned>(::geteuid()),
                  std::hash<std::string>{}(limit_name));
    state* s = nullptr;
    const int fd = open_shared(name, s);
    if (fd >= 0) p = std::shared_ptr<limit_pool>(new limit_pool(fd, s, name));
  }
  if (!p) p = std::make_shared<limit_pool>();
  w = p;
  return p;
}

int limit_pool::join() {
  std::lock_guard plk(mu_);
  for (;;) {
    // The file stays linked while it is locked (a leaver unlinks under the lock); one the last
    // member removed before we locked it is replaced, and the new one locked in its place.
    flock_guard lk(fd_);
    if (replace_if_unlinked()) continue;  // (the old descriptor stays open until we go)
    last_reap_ns_.store(0, std::memory_order_relaxed);
    reap();
    for (int i = 0; i < kSlots; ++i) {
      state::slot& sl = st().slots[i];
      std::int32_t free = 0;
      if (sl.pid.load() != 0) continue;
      sl.held.store(0);
      sl.start.store(own_start());
      if (sl.pid.compare_exchange_strong(free, static_cast<std::int32_t>(::getpid()))) return i;
    }
    return -1;
  }
}

void limit_pool::leave(int member) {
  if (member < 0) return;
  std::lock_guard plk(mu_);
  flock_guard lk(fd_);
  state& pool = st();
  state::slot& sl = pool.slots[member];
  pool.held.fetch_sub(sl.held.exchange(0));
  sl.pid.store(0);
  if (fd_ < 0) return;
  last_reap_ns_.store(0, std::memory_order_relaxed);
  reap();  // dead members do not keep the file
  for (const state::slot& other : pool.slots) {
    if (other.pid.load() != 0) return;
  }
  // The last member: the file goes (a process that opened it meanwhile finds it unlinked when
  // it joins, and opens a new one: replace_if_unlinked).
  (void)os::remove_file(path_);
}

int limit_pool::members() const noexcept {
  int n = 0;
  for (const state::slot& sl : st().slots) n += sl.pid.load(std::memory_order_relaxed) != 0;
  return n;
}

void limit_pool::reap() {
  const std::int64_t now = ns_of(std::chrono::steady_clock::now());
  std::int64_t last = last_reap_ns_.load(std::memory_order_relaxed);
  if (last != 0 && now - last < 100'000'000) return;
  if (!last_reap_ns_.compare_exchange_strong(last, now)) return;  // another thread looks
  for (state::slot& sl : st().slots) {
    const std::int32_t pid = sl.pid.load();
    if (pid == 0 || alive(pid, sl.start.load())) continue;
    std::int32_t expect = pid;
    const std::int64_t had = sl.held.load();
    if (!sl.pid.compare_exchange_strong(expect, -1)) continue;  // another reaper, or it left
    st().held.fetch_sub(had);
    sl.held.fetch_sub(had);
    sl.pid.store(0);
  }
}

bool limit_pool::take(std::int64_t bytes, int member) noexcept {
  const std::int64_t after = st().held.fetch_add(bytes, std::memory_order_acq_rel) + bytes;
  if (after > cap()) {
    st().held.fetch_sub(bytes, std::memory_order_acq_rel);
    note_wanting(member);
    return false;
  }
  st().slots[member].held.fetch_add(bytes, std::memory_order_relaxed);
  return true;
}

void limit_pool::note_wanting(int member) noexcept {
  st().refused_member.store(member, std::memory_order_relaxed);
  st().refused_ns.store(ns_of(std::chrono::steady_clock::now()), std::memory_order_release);
}

void limit_pool::take_anyway(std::int64_t bytes, int member) noexcept {
  st().held.fetch_add(bytes, std::memory_order_acq_rel);
  st().slots[member].held.fetch_add(bytes, std::memory_order_relaxed);
}

void limit_pool::give(std::int64_t bytes, int member) noexcept {
  st().slots[member].held.fetch_sub(bytes, std::memory_order_relaxed);
  st().held.fetch_sub(bytes, std::memory_order_acq_rel);
}

std::int64_t limit_pool::held() const noexcept { return st().held.load(std::memory_order_acquire); }

void limit_pool::set_cap(std::int64_t bytes) noexcept {
  st().cap_plus_one.store(std::max<std::int64_t>(0, bytes) + 1, std::memory_order_release);
}

std::int64_t limit_pool::cap() const noexcept {
  const std::int64_t c = st().cap_plus_one.load(std::memory_order_acquire);
  return c == 0 ? INT64_MAX : c - 1;
}

bool limit_pool::contended_by_other(int member,
                                    std::chrono::steady_clock::time_point now) const noexcept {
  const std::int64_t at = st().refused_ns.load(std::memory_order_acquire);
  if (at == 0 || ns_of(now) - at > std::chrono::nanoseconds(kContention).count()) return false;
  return st().refused_member.load(std::memory_order_relaxed) != member;
}

}  // namespace pheap::paging
