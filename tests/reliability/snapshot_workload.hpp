// The snapshot campaigns' heap workload and its acknowledgement protocol
// (tests/reliability/snapshot_fs_test.cpp, snapshot_concurrency_test.cpp).
//
// Writer thread t runs steps s = 1, 2, ...; step s
//   1. publishes started[t] = s,
//   2. constructs the named record "w<t>/<s>" — a struct holding a vector, a string and a map
//      built by its constructor (construct<T> is atomic with respect to a watermark: flush()
//      waits for constructors in progress and holds new ones back),
//   3. destroys "w<t>/<s-K>" (so K records per writer stay alive),
//   4. overwrites cell (s mod C) of the writer's named array "cells/<t>" in place with a plain
//      store (not atomic with respect to a watermark: a store racing a flush lands in that
//      watermark or the next),
//   5. churns raw allocate/deallocate (allocator traffic whose content is never checked),
//   6. publishes done[t] = s, and every `flush_every` steps flushes itself.
//
// Every flush()/snapshot() goes through `recorded_flush`/`recorded_snapshot`, which read
// lo[t] = done[t] before the call and hi[t] = started[t] after it returned, and file the pair as
// the *window* of the epoch the call produced. Any watermark E then holds, for every writer t,
// a state "after step b, possibly with step b+... in flight" with lo[t] <= b <= hi[t]:
// everything a writer finished before the flush started is in it, nothing it started after
// the flush returned is. verify_state() checks exactly that against a read-only manager:
//   * the records of t are exactly those of one state in the window (either "step b done":
//     w<t>/<b-K+1..b>, or "step b in flight between construct and destroy": w<t>/<b-K..b>,
//     b > lo), each record byte-exact;
//   * every cell holds the value of a write to it from a step in [last write <= lo, hi]
//     (0 if it was never written by step lo and no later write landed);
//   * the base arrays (written before the writers start) hold exactly their expected version;
//   * the number of named objects is exactly what those imply (nothing else exists).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "pheap/container.hpp"
#include "pheap/pheap.hpp"

namespace pheap::test::snap {

using u64 = std::uint64_t;

inline u64 mix64(u64 x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
inline u64 key(u64 t, u64 s, u64 salt) { return mix64((t << 48) ^ (s << 8) ^ salt); }

struct workload_config {
  unsigned writers = 4;
  u64 keep = 8;           // K: records alive per writer
  u64 cells = 1024;       // C: in-place cells per writer
  u64 max_values = 160;   // u64 elements per record vector (1..max)
  u64 base_arrays = 0;    // "real data": named u64 arrays written before the writers start
  u64 base_bytes = 0;     // bytes per base array
  u64 flush_every = 0;    // writers flush themselves every N steps (0: never)
  u64 raw_ring = 8;       // raw blocks each writer keeps alive
};

// A record, immutable after its constructor.
struct record {
  using vec_t = pheap::container::vector<u64>;
  using str_t = pheap::container::string;
  using map_t = pheap::container::map<u64, u64>;

  static u64 n_values(u64 t, u64 s, u64 max) { return 1 + key(t, s, 1) % max; }
  static u64 text_len(u64 t, u64 s) { return key(t, s, 2) % 240; }
  static u64 n_tags(u64 t, u64 s) { return key(t, s, 3) % 7; }
  static u64 value(u64 t, u64 s, u64 i) { return key(t, s, 16 + i); }
  static char text_char(u64 t, u64 s, u64 i) {
    return static_cast<char>('a' + key(t, s, 5000 + i) % 26);
  }

  record(const pheap::allocator<std::byte>& a, u64 t, u64 s, u64 max)
      : thread(t), step(s), values(a), text(a), tags(a) {
    const u64 n = n_values(t, s, max);
    values.reserve(n);
    for (u64 i = 0; i < n; ++i) values.push_back(value(t, s, i));
    const u64 len = text_len(t, s);
    for (u64 i = 0; i < len; ++i) text.push_back(text_char(t, s, i));
    for (u64 i = 0; i < n_tags(t, s); ++i) tags.emplace(key(t, s, 9000 + i), i);
    seal = key(t, s, 77);
  }

  // Empty when the record is exactly what (t, s) builds.
  std::string diff(u64 t, u64 s, u64 max) const {
    const std::string who = "record w" + std::to_string(t) + "/" + std::to_string(s) + ": ";
    if (thread != t || step != s) return who + "header says w" + std::to_string(thread) + "/" + std::to_string(step);
    if (seal != key(t, s, 77)) return who + "seal wrong";
    const u64 n = n_values(t, s, max);
    if (values.size() != n) return who + "vector has " + std::to_string(values.size()) + " elements, expected " + std::to_string(n);
    for (u64 i = 0; i < n; ++i) {
      if (values[i] != value(t, s, i)) return who + "vector element " + std::to_string(i) + " wrong";
    }
    if (text.size() != text_len(t, s)) return who + "string length wrong";
    for (u64 i = 0; i < text.size(); ++i) {
      if (text[i] != text_char(t, s, i)) return who + "string byte " + std::to_string(i) + " wrong";
    }
    if (tags.size() != n_tags(t, s)) return who + "map size wrong";
    for (u64 i = 0; i < n_tags(t, s); ++i) {
      auto it = tags.find(key(t, s, 9000 + i));
      if (it == tags.end() || it->second != i) return who + "map entry " + std::to_string(i) + " wrong";
    }
    return {};
  }

  u64 thread, step;
  vec_t values;
  str_t text;
  map_t tags;
  u64 seal = 0;
};

inline std::string record_name(u64 t, u64 s) { return "w" + std::to_string(t) + "/" + std::to_string(s); }
inline std::string cells_name(u64 t) { return "cells/" + std::to_string(t); }
inline std::string base_name(u64 i) { return "base/" + std::to_string(i); }
inline u64 cell_value(u64 t, u64 s) { return key(t, s, 4) | 1; }  // never 0
inline u64 base_value(u64 i, u64 j, u64 version) { return key(i + 1000, j, version); }

// What a watermark must hold (see the header comment).
struct window {
  std::vector<u64> lo, hi;
};

// Writes base array i (version v) in place: used to build the base data and to overwrite it
// later (in the source after snapshots, or in a snapshot to prove independence).
inline void write_base(manager& m, const workload_config& c, u64 i, u64 version) {
  const u64 n = c.base_bytes / 8;
  auto [p, len] = m.find<u64>(base_name(i));
  if (p == nullptr) p = m.construct<u64>(base_name(i))[n](0);
  if (p == nullptr) throw std::runtime_error("cannot construct " + base_name(i));
  for (u64 j = 0; j < n; ++j) p[j] = base_value(i, j, version);
}

// Checks `m` (a read-only view of a watermark) against window `w`. `base_version[i]` is the
// expected version of base array i. `writers_destroyed`: writers whose records and cells were
// deliberately removed (independence checks). Returns "" when exact; sets *lost when an
// acknowledged write (one finished before the flush started) is missing.
inline std::string verify_state(const manager& m, const workload_config& c, const window& w,
                                const std::vector<u64>& base_version,
                                const std::vector<bool>& writers_destroyed = {},
                                bool* lost = nullptr) {
  auto lose = [&] { if (lost) *lost = true; };
  u64 named = 0;
  for (u64 i = 0; i < c.base_arrays; ++i) {
    auto [p, n] = m.find<u64>(base_name(i));
    if (p == nullptr || n != c.base_bytes / 8) { lose(); return base_name(i) + " missing or wrong length"; }
    for (u64 j = 0; j < n; ++j) {
      if (p[j] != base_value(i, j, base_version[i])) {
        return base_name(i) + " element " + std::to_string(j) + " is not version " + std::to_string(base_version[i]);
      }
    }
    ++named;
  }
  for (u64 t = 0; t < c.writers; ++t) {
    if (t < writers_destroyed.size() && writers_destroyed[t]) continue;
    const u64 lo = w.lo[t], hi = w.hi[t];
    const std::string who = "writer " + std::to_string(t) + " (window " + std::to_string(lo) + ".." + std::to_string(hi) + "): ";
    // Records: probe a range wide enough for every valid state; the count check below
    // catches anything outside it.
    const u64 first = lo > c.keep + 2 ? lo - c.keep - 2 : 1;
    std::vector<u64> present;
    for (u64 s = first; s <= hi + 2; ++s) {
      auto [r, n] = m.find<record>(record_name(t, s));
      if (r == nullptr) continue;
      if (n != 1) return who + record_name(t, s) + " has length " + std::to_string(n);
      if (auto d = r->diff(t, s, c.max_values); !d.empty()) return who + d;
      present.push_back(s);
    }
    named += present.size();
    const u64 b = present.empty() ? 0 : present.back();
    auto contiguous_from = [&](u64 a) {
      if (b == 0) return present.empty();
      if (present.size() != b - a + 1) return false;
      for (u64 k = 0; k < present.size(); ++k) if (present[k] != a + k) return false;
      return true;
    };
    const u64 full_from = b > c.keep ? b - c.keep + 1 : 1;
    const bool full = contiguous_from(full_from);
    const bool in_flight = b > c.keep && contiguous_from(b - c.keep);
    std::string shape;
    for (u64 s : present) shape += " " + std::to_string(s);
    if (b < lo) { lose(); return who + "newest record is step " + std::to_string(b) + " < " + std::to_string(lo) + " (acknowledged steps lost); present:" + shape; }
    if (b > hi) return who + "record of step " + std::to_string(b) + " started after the flush returned; present:" + shape;
    if (!full && !(in_flight && b > lo)) {
      return who + "records are not one state of the writer; present:" + shape;
    }
    // Cells.
    auto [cells, ncells] = m.find<u64>(cells_name(t));
    if (cells == nullptr || ncells != c.cells) { lose(); return who + "cells missing"; }
    ++named;
    for (u64 k = 0; k < c.cells; ++k) {
      const u64 v = cells[k];
      // Steps writing cell k: s >= 1, s % C == k.
      const u64 first_writer = k == 0 ? c.cells : k;
      std::optional<u64> s0;  // last write finished before the flush started
      if (lo >= first_writer) s0 = lo - (lo - first_writer) % c.cells;
      bool ok = !s0 && v == 0;
      for (u64 s = s0 ? *s0 : first_writer; s <= hi && !ok; s += c.cells) ok = v == cell_value(t, s);
      if (!ok) {
        bool older = false;
        for (u64 s = first_writer; s0 && s < *s0 && !older; s += c.cells) older = v == cell_value(t, s);
        if (older || (s0 && v == 0)) lose();
        return who + "cell " + std::to_string(k) + " holds " + (older ? "an older value" : v == 0 ? "0" : "a foreign value") +
               (s0 ? " (step " + std::to_string(*s0) + " had written it before the flush)" : "");
      }
    }
  }
  u64 extra = 0;
  for (const auto& name : {std::string("snapshot-mark"), std::string("sparse-ptr")}) {
    if (m.find<u64>(name).first != nullptr) ++extra;
  }
  if (m.get_num_named_objects() != named + extra) {
    return "datastore has " + std::to_string(m.get_num_named_objects()) + " named objects, expected " +
           std::to_string(named + extra);
  }
  return {};
}

// The shared state of one run: writers, the flush/snapshot recorder and the windows.
class workload {
 public:
  workload(manager& m, const workload_config& c)
      : m_(m), c_(c), started_(new std::atomic<u64>[c.writers]), done_(new std::atomic<u64>[c.writers]) {
    for (unsigned t = 0; t < c.writers; ++t) {
      started_[t] = 0;
      done_[t] = 0;
      if (m.construct<u64>(cells_name(t))[c.cells](0) == nullptr) throw std::runtime_error("cells exist");
    }
    for (u64 i = 0; i < c.base_arrays; ++i) write_base(m, c, i, 1);
    base_version_.assign(c.base_arrays, 1);
  }

  const workload_config& config() const { return c_; }
  manager& source() { return m_; }
  const std::vector<u64>& base_version() const { return base_version_; }
  // Only while no snapshot is being verified and no writer runs.
  void rewrite_base(u64 i, u64 version) {
    write_base(m_, c_, i, version);
    base_version_[i] = version;
  }

  // flush() recording the window of the epoch it produced. Flushes run concurrently with each
  // other, but not while a hold_flushes() lock lives.
  u64 recorded_flush() {
    std::shared_lock gate(flush_gate_);
    auto lo = read(done_);
    const u64 e = m_.flush();
    file(e, std::move(lo), read(started_));
    return e;
  }
  // snapshot() likewise: its internal flush produced the returned epoch (the copy may hold a
  // later one, produced by another recorded flush).
  u64 recorded_snapshot(const std::string& dst) {
    auto lo = read(done_);
    const u64 e = m_.snapshot(dst);
    file(e, std::move(lo), read(started_));
    return e;
  }

  // Holds every recorded_flush() back (writers that flush wait) while the lock lives, so that a
  // snapshot taken under it can be measured before the source writes its files again.
  std::unique_lock<std::shared_mutex> hold_flushes() { return std::unique_lock(flush_gate_); }

  // The window of epoch e; waits (bounded) for the flush that produced it to file it.
  std::optional<window> window_of(u64 e, std::chrono::milliseconds wait = std::chrono::seconds(30)) {
    std::unique_lock lk(mu_);
    cv_.wait_for(lk, wait, [&] { return windows_.count(e) != 0; });
    auto it = windows_.find(e);
    if (it == windows_.end()) return std::nullopt;
    return it->second;
  }
  u64 max_epoch() {
    std::lock_guard lk(mu_);
    return windows_.empty() ? 0 : windows_.rbegin()->first;
  }

  // Writer t: steps until `stop` (or max_steps). Throws nothing: a failure is recorded.
  void run_writer(unsigned t, const std::atomic<bool>& stop, u64 max_steps = ~0ull) {
    std::vector<void*> raw;
    std::mt19937_64 rng(t * 7919 + 17);
    try {
      auto [cells, n] = m_.find<u64>(cells_name(t));
      if (cells == nullptr || n != c_.cells) throw std::runtime_error("cells missing");
      const auto alloc = m_.get_allocator<std::byte>();
      for (u64 s = done_[t] + 1; s <= max_steps && !stop.load(); ++s) {
        started_[t].store(s);
        if (m_.construct<record>(record_name(t, s))(alloc, t, s, c_.max_values) == nullptr) {
          throw std::runtime_error(record_name(t, s) + " already exists");
        }
        if (s > c_.keep && !m_.destroy<record>(record_name(t, s - c_.keep))) {
          throw std::runtime_error(record_name(t, s - c_.keep) + " was not there to destroy");
        }
        cells[s % c_.cells] = cell_value(t, s);
        void* p = m_.allocate(16 + rng() % 6000);
        if (p == nullptr) throw std::runtime_error("allocate returned nullptr");
        std::memset(p, static_cast<int>(s), 16);
        raw.push_back(p);
        if (raw.size() > c_.raw_ring) {
          const std::size_t k = rng() % raw.size();
          m_.deallocate(raw[k]);
          raw[k] = raw.back();
          raw.pop_back();
        }
        done_[t].store(s);
        if (c_.flush_every != 0 && s % c_.flush_every == 0) recorded_flush();
      }
    } catch (const std::exception& e) {
      fail("writer " + std::to_string(t) + ": " + e.what());
    }
    for (void* p : raw) m_.deallocate(p);
  }

  u64 steps(unsigned t) const { return done_[t].load(); }
  // Per writer: the last step finished / the last step started (for hand-made windows).
  std::vector<u64> finished() const { return read(done_); }
  std::vector<u64> begun() const { return read(started_); }
  window quiescent_window() const { return {read(done_), read(done_)}; }
  // Records the window of an epoch produced while every writer was stopped.
  void file_quiescent(u64 e) { file(e, read(done_), read(done_)); }

  void fail(const std::string& why) {
    std::lock_guard lk(mu_);
    if (errors_.size() < 20) errors_.push_back(why);
  }
  std::vector<std::string> errors() {
    std::lock_guard lk(mu_);
    return errors_;
  }

 private:
  std::vector<u64> read(const std::unique_ptr<std::atomic<u64>[]>& a) const {
    std::vector<u64> v(c_.writers);
    for (unsigned t = 0; t < c_.writers; ++t) v[t] = a[t].load();
    return v;
  }
  void file(u64 e, std::vector<u64> lo, std::vector<u64> hi) {
    std::lock_guard lk(mu_);
    auto it = windows_.find(e);
    if (it == windows_.end()) {
      windows_.emplace(e, window{std::move(lo), std::move(hi)});
    } else {
      // Two calls returned the same epoch: both windows hold, so their intersection does.
      for (unsigned t = 0; t < c_.writers; ++t) {
        it->second.lo[t] = std::max(it->second.lo[t], lo[t]);
        it->second.hi[t] = std::min(it->second.hi[t], hi[t]);
      }
    }
    cv_.notify_all();
  }

  manager& m_;
  workload_config c_;
  std::unique_ptr<std::atomic<u64>[]> started_, done_;
  std::vector<u64> base_version_;
  std::mutex mu_;
  std::shared_mutex flush_gate_;  // recorded_flush shared, hold_flushes exclusive
  std::condition_variable cv_;
  std::map<u64, window> windows_;
  std::vector<std::string> errors_;
};

}  // namespace pheap::test::snap
