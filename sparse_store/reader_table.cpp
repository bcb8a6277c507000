// sparse_store/reader_table.cpp — the shared reader table (reader_table.hpp; FORMAT.md
// "Readers beside a writer"). Byte layout of pheap.readers (table version 1):
//
//   header, 4096 bytes at 0:
//     0 magic "PHEAPRT\0" (8) | 8 version u32 | 12 page size u32 | 16 uuid (16) |
//     32 slots u32 | 36 buckets u32 | 40 entries u32 | 44 0 u32 | 48 grains u64 |
//     64 floor u64 | 72 0 u64 | 80 grains in use u64 | 88 pins made u64 |
//     96 slots expired u64 | 104 free entry stack head u32 (index + 1) |
//     108 entries ever used u32 | 112 grain cursor u64 | 120 slots ever claimed u32 |
//     124 0 u32 | 128 bytes allocated u64
//   slots, 64 bytes each, from 4096:
//     0 state u32 (0 free, 1 active, 2 expired) | 4 expiry reason u32 | 8 epoch u64 |
//     16 directory length u64 | 24 directory home u32 | 28 directory CRC u32 | 32 pid u32 |
//     36 0 u32 | 40 registered at (Unix ns) u64 | 48 0 (16)
//   buckets, 8 bytes each (4096-aligned): head u32 (entry index + 1, 0 empty) | sequence u32
//   grain bitmap, u64 words (4096-aligned)
//   entries, 40 bytes each (4096-aligned), last:
//     0 next u32 (index + 1) | 4 kind u32 (0 free) | 8 id u64 | 16 lo u64 | 24 hi u64 |
//     32 first grain u32 | 36 grains u32
//
// The file is sparse, but every byte a process stores through the mapping is written (zeros)
// first (a store into a hole of a full file system is a SIGBUS; shared_map.hpp): everything
// before the entries at the reset, the entries by the writer in 1 MiB steps ahead of their use
// (128 header: bytes written so far). A step that finds the disk full is a pin that cannot be
// kept.
//
// Lock-free reads of the mapping go through std::atomic_ref: the same bytes are written by
// other processes.
#include "reader_table.hpp"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "pheap/error.hpp"
#include "layout.hpp"

namespace pheap::store {

namespace {

constexpr char table_magic[8] = {'P', 'H', 'E', 'A', 'P', 'R', 'T', '\0'};
constexpr std::uint32_t table_version = 1;
constexpr std::uint64_t attach_byte = 0, mutex_byte = 1, owner_base = 64;
constexpr std::uint64_t max_entries = 4u << 20;
constexpr std::uint32_t slot_free = 0, slot_active = 1, slot_expired = 2;

template <class T>
T load(const std::byte* p, std::memory_order o = std::memory_order_acquire) {
  return std::atomic_ref<T>(*reinterpret_cast<T*>(const_cast<std::byte*>(p))).load(o);
}
template <class T>
void store(std::byte* p, T v, std::memory_order o = std::memory_order_release) {
  std::atomic_ref<T>(*reinterpret_cast<T*>(p)).store(v, o);
}
template <class T>
T add(std::byte* p, T v) {
  return std::atomic_ref<T>(*reinterpret_cast<T*>(p)).fetch_add(v, std::memory_order_acq_rel);
}
template <class T>
T sub(std::byte* p, T v) {
  return std::atomic_ref<T>(*reinterpret_cast<T*>(p)).fetch_sub(v, std::memory_order_acq_rel);
}

std::uint64_t now_unix_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

}  // namespace

// Offsets of every part, from the header's counts.
struct reader_table::layout {
  std::uint32_t slots = 0, buckets = 0, entries = 0;
  std::uint64_t grains = 0;
  std::uint64_t slot0 = 4096, bucket0 = 0, entry0 = 0, bitmap0 = 0, size = 0;

  layout(std::uint32_t s, std::uint32_t b, std::uint32_t e, std::uint64_t g)
      : slots(s), buckets(b), entries(e), grains(g) {
    bucket0 = round_up(slot0 + 64ull * slots, 4096);
    bitmap0 = round_up(bucket0 + 8ull * buckets, 4096);
    entry0 = round_up(bitmap0 + 8 * ((grains + 63) / 64), 4096);
    size = round_up(entry0 + 40ull * entries, 4096);
  }
};

namespace {

// Header field offsets.
constexpr std::size_t h_version = 8, h_page_size = 12, h_uuid = 16, h_slots = 32, h_buckets = 36,
                      h_entries = 40, h_grains = 48, h_floor = 64, h_used = 80,
                      h_pins = 88, h_expired = 96, h_free = 104, h_high = 108, h_cursor = 112,
                      h_claimed = 120, h_allocated = 128;
// Slot field offsets.
constexpr std::size_t s_state = 0, s_reason = 4, s_epoch = 8, s_dir_length = 16, s_dir_home = 24,
                      s_dir_crc = 28, s_pid = 32, s_since = 40;
// Entry field offsets.
constexpr std::size_t e_next = 0, e_kind = 4, e_id = 8, e_lo = 16, e_hi = 24, e_first = 32, e_grains = 36;

std::uint32_t bucket_of(pin_kind kind, std::uint64_t id, std::uint32_t buckets) {
  const std::uint64_t h = (id * 0x9E3779B97F4A7C15ull) ^ (static_cast<std::uint64_t>(kind) << 61);
  return static_cast<std::uint32_t>((h ^ (h >> 29)) & (buckets - 1));
}

}  // namespace

reader_table::reader_table(std::unique_ptr<io::file> f, std::string path, std::string dir)
    : file_(std::move(f)), path_(std::move(path)), dir_(std::move(dir)) {}

// Closing the file drops every byte lock of its open file description — unless an engine keeps
// another descriptor of it (a test engine may): so they are released here, explicitly.
reader_table::~reader_table() {
  if (!file_) return;
  const int fd = file_->fd();
  for (std::uint32_t i : owned_) {
    try {
      os::unlock(fd, owner_base + i, path_);
    } catch (...) {
    }
  }
  for (std::uint64_t b : {mutex_byte, std::uint64_t{2}, std::uint64_t{3}, attach_byte}) {
    try {
      os::unlock(fd, b, path_);
    } catch (...) {
    }
  }
}

std::unique_ptr<reader_table> reader_table::attach(io::engine& eng, const std::string& dir,
                                                   const geometry& g) {
  const std::string path = join(dir, readers_name);
  std::unique_ptr<io::file> f;
  try {
    f = eng.open(path, io::open_mode::create);
  } catch (const error& e) {
    const int err = e.sys_errno();
    if (err == EACCES || err == EPERM || err == EROFS) return nullptr;
    throw;
  }
  std::unique_ptr<reader_table> t(new reader_table(std::move(f), path, dir));
  const int fd = t->file_->fd();
  // Alone (nobody holds ATTACH): whatever the file holds is left over from a dead session.
  // Otherwise ATTACH shared, waiting out a process resetting it (it holds it exclusively for
  // a few truncates: a bounded wait, then errc::locked rather than a hang).
  for (int waited_ms = 0;; ++waited_ms) {
    if (os::try_lock(fd, attach_byte, os::lock_kind::write, path)) {
      t->reset(eng, g);  // on a throw the destructor releases ATTACH
      os::lock(fd, attach_byte, os::lock_kind::read, path);  // converts: never waits
      return t;
    }
    if (os::try_lock(fd, attach_byte, os::lock_kind::read, path)) break;
    if (waited_ms >= 30000) {
      throw error(errc::locked, path, "attach",
                  "another process has held it exclusively (resetting it) for 30 s: is it stuck?");
    }
    ::usleep(1000);
  }
  t->map_and_check(g, true);
  return t;
}

void reader_table::reset(io::engine& eng, const geometry& g) {
  const std::uint64_t grains = std::max<std::uint64_t>(1, g.pin_limit / grain);
  if (grains > 0xffffffffull) {
    throw error(errc::invalid_argument, path_, "attach", "pin limit of " + std::to_string(g.pin_limit) + " bytes exceeds 16 TiB");
  }
  const auto entries = static_cast<std::uint32_t>(std::min(grains, max_entries));
  std::uint32_t buckets = 1024;
  while (buckets < entries / 16) buckets *= 2;
  layout lay(max_slots, buckets, entries, grains);
  map_ = {};
  eng.truncate(*file_, 0);  // every field zero: slots free, no pins, floor 0
  eng.truncate(*file_, lay.size);
  const std::string pinned = join(dir_, pinned_name);
  if (eng.exists(pinned)) {
    auto p = eng.open(pinned, io::open_mode::read_write);
    eng.truncate(*p, 0);
  }
  if (!os::allocate(file_->fd(), 0, lay.entry0, path_)) {
    throw error(errc::no_space, path_, "attach", "no space for the reader table (" + std::to_string(lay.entry0 >> 10) + " KiB)");
  }
  map_ = os::shared_map(file_->fd(), lay.size, true, path_);
  std::byte* h = map_.data();
  store<std::uint64_t>(h + h_allocated, lay.entry0, std::memory_order_relaxed);
  store<std::uint32_t>(h + h_version, table_version, std::memory_order_relaxed);
  store<std::uint32_t>(h + h_page_size, g.page_size, std::memory_order_relaxed);
  std::memcpy(h + h_uuid, g.id.data(), g.id.size());
  store<std::uint32_t>(h + h_slots, lay.slots, std::memory_order_relaxed);
  store<std::uint32_t>(h + h_buckets, lay.buckets, std::memory_order_relaxed);
  store<std::uint32_t>(h + h_entries, lay.entries, std::memory_order_relaxed);
  store<std::uint64_t>(h + h_grains, lay.grains, std::memory_order_relaxed);
  std::memcpy(h, table_magic, sizeof table_magic);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  lay_ = std::make_unique<layout>(lay);
}

void reader_table::map_and_check(const geometry& g, bool writable) {
  std::byte h[4096];
  const ssize_t got = ::pread(file_->fd(), h, sizeof h, 0);
  const auto bad = [&](const std::string& why) {
    throw error(errc::corrupt, path_, "attach", why + " (the file is shared state, not data: it is rebuilt when no process has the datastore open)");
  };
  if (got != static_cast<ssize_t>(sizeof h) || std::memcmp(h, table_magic, sizeof table_magic) != 0) {
    bad("not a reader table");
  }
  uuid id{};
  std::memcpy(id.data(), h + h_uuid, id.size());
  if (load<std::uint32_t>(h + h_version) != table_version) bad("reader table of another version");
  if (id != g.id) bad("reader table of datastore " + to_string(id) + ", not " + to_string(g.id));
  if (g.page_size != 0 && load<std::uint32_t>(h + h_page_size) != g.page_size) bad("reader table of another page size");
  const std::uint32_t slots = load<std::uint32_t>(h + h_slots), buckets = load<std::uint32_t>(h + h_buckets),
                      entries = load<std::uint32_t>(h + h_entries);
  const std::uint64_t grains = load<std::uint64_t>(h + h_grains);
  if (slots != max_slots || buckets == 0 || (buckets & (buckets - 1)) != 0 || entries == 0 ||
      entries > max_entries || grains == 0 || grains > 0xffffffffull) {
    bad("impossible table geometry");
  }
  layout lay(slots, buckets, entries, grains);
  const off_t size = ::lseek(file_->fd(), 0, SEEK_END);
  if (size < 0 || static_cast<std::uint64_t>(size) < lay.size) bad("truncated reader table");
  map_ = os::shared_map(file_->fd(), lay.size, writable, path_);
  lay_ = std::make_unique<layout>(lay);
}

std::uint64_t reader_table::limit_bytes() const { return lay_->grains * grain; }

// The slots to scan: those ever claimed since the reset (a seq_cst load: a slot a reader
// publishes after claiming it is seen by a scan that sees its state).
std::uint32_t reader_table::claimed() const {
  return std::min(lay_->slots, load<std::uint32_t>(map_.data() + h_claimed, std::memory_order_seq_cst));
}

std::byte* reader_table::slot(std::uint32_t i) const { return map_.data() + lay_->slot0 + 64ull * i; }
std::byte* reader_table::bucket(std::uint32_t b) const { return map_.data() + lay_->bucket0 + 8ull * b; }
std::byte* reader_table::entry(std::uint32_t e) const { return map_.data() + lay_->entry0 + 40ull * e; }

// MUTEX (byte 1) for the scope: claims, frees and state changes of slots.
class reader_table::mutex_hold {
 public:
  explicit mutex_hold(const reader_table& t) : t_(t) {
    os::lock(t_.file_->fd(), mutex_byte, os::lock_kind::write, t_.path_);
  }
  ~mutex_hold() {
    try {
      os::unlock(t_.file_->fd(), mutex_byte, t_.path_);
    } catch (...) {  // closing the file releases it anyway
    }
  }
  mutex_hold(const mutex_hold&) = delete;
  mutex_hold& operator=(const mutex_hold&) = delete;

 private:
  const reader_table& t_;
};

// --- a reader --------------------------------------------------------------------------------

int reader_table::claim(const std::string& dir, const char* op) {
  const int fd = file_->fd();
  std::lock_guard lk(mu_);
  const mutex_hold held(*this);
  if (os::held_elsewhere(fd, static_cast<std::uint64_t>(exclusion::removing), path_)) {
    throw error(errc::locked, dir, op, "datastore " + dir + " is being removed");
  }
  if (os::held_elsewhere(fd, static_cast<std::uint64_t>(exclusion::direct), path_)) {
    throw error(errc::locked, dir, op,
                "datastore " + dir + " is open read-write by a kernel-mmap writer (backend = "
                "mmap), which cannot serve concurrent readers: close it, or open the writer "
                "with the uffd backend");
  }
  for (std::uint32_t i = 0; i < lay_->slots; ++i) {  // every slot: a claim may raise the count
    if (owned_.count(i) != 0) continue;  // ours (a refresh holds two): try_lock would pass
    if (!os::try_lock(fd, owner_base + i, os::lock_kind::write, path_)) continue;  // alive
    std::byte* s = slot(i);
    store<std::uint32_t>(s + s_state, slot_free);  // a dead reader's, or never used
    store<std::uint32_t>(s + s_reason, 0);
    store<std::uint32_t>(s + s_pid, static_cast<std::uint32_t>(::getpid()), std::memory_order_relaxed);
    store<std::uint64_t>(s + s_since, now_unix_ns(), std::memory_order_relaxed);
    owned_.insert(i);
    // Scans stop at the highest slot ever claimed (claims take the lowest free one).
    if (load<std::uint32_t>(map_.data() + h_claimed) < i + 1) store<std::uint32_t>(map_.data() + h_claimed, i + 1, std::memory_order_seq_cst);
    return static_cast<int>(i);
  }
  throw error(errc::locked, dir, op,
              "datastore " + dir + " has " + std::to_string(lay_->slots) +
                  " readers attached, the most the reader table holds");
}

void reader_table::publish(int i, const reader_epoch& e) {
  std::byte* s = slot(static_cast<std::uint32_t>(i));
  store<std::uint64_t>(s + s_epoch, e.epoch, std::memory_order_relaxed);
  store<std::uint64_t>(s + s_dir_length, e.dir_length, std::memory_order_relaxed);
  store<std::uint32_t>(s + s_dir_home, e.dir_home, std::memory_order_relaxed);
  store<std::uint32_t>(s + s_dir_crc, e.dir_crc, std::memory_order_relaxed);
  store<std::uint32_t>(s + s_reason, 0, std::memory_order_relaxed);
  store<std::uint32_t>(s + s_state, slot_active, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

std::uint64_t reader_table::floor() const {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return load<std::uint64_t>(map_.data() + h_floor, std::memory_order_seq_cst);
}

reader_table::expiry reader_table::expired(int i) const {
  const std::byte* s = slot(static_cast<std::uint32_t>(i));
  if (load<std::uint32_t>(s + s_state) != slot_expired) return expiry::none;
  return static_cast<expiry>(load<std::uint32_t>(s + s_reason));
}

void reader_table::release(int i) noexcept {
  const auto u = static_cast<std::uint32_t>(i);
  store<std::uint32_t>(slot(u) + s_state, slot_free);
  std::lock_guard lk(mu_);
  owned_.erase(u);
  try {
    os::unlock(file_->fd(), owner_base + u, path_);
  } catch (...) {  // closing the file releases it anyway
  }
}

// --- lookups -----------------------------------------------------------------------------------

// A seqlock walk of one bucket's chain: the writer bumps the bucket's sequence number after
// every unlink and before the entry can be reused, so a walk that may have strayed onto a
// reused entry sees the number move and walks again. An unlink is one store, so a walk during
// one sees the chain with or without the entry (whose bytes are intact until its reuse): no
// walk waits for the writer, and a writer killed mid-unlink leaves a chain readers can walk.
std::optional<pinned_run> reader_table::find(pin_kind kind, std::uint64_t id, std::uint64_t epoch) const {
  std::byte* b = bucket(bucket_of(kind, id, lay_->buckets));
  for (;;) {
    const std::uint32_t s1 = load<std::uint32_t>(b + 4);
    std::optional<pinned_run> found;
    std::uint32_t next = load<std::uint32_t>(b + 0);
    for (std::uint32_t steps = 0; next != 0 && steps <= lay_->entries; ++steps) {
      if (next > lay_->entries) break;  // a torn read of a reused entry: the check below retries
      const std::byte* e = entry(next - 1);
      if (load<std::uint32_t>(e + e_kind, std::memory_order_relaxed) == static_cast<std::uint32_t>(kind) &&
          load<std::uint64_t>(e + e_id, std::memory_order_relaxed) == id &&
          load<std::uint64_t>(e + e_lo, std::memory_order_relaxed) <= epoch &&
          epoch <= load<std::uint64_t>(e + e_hi, std::memory_order_relaxed)) {
        found = pinned_run{load<std::uint32_t>(e + e_first, std::memory_order_relaxed),
                           load<std::uint32_t>(e + e_grains, std::memory_order_relaxed)};
        break;
      }
      next = load<std::uint32_t>(e + e_next);
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (load<std::uint32_t>(b + 4, std::memory_order_relaxed) == s1) return found;
  }
}

// --- the writer --------------------------------------------------------------------------------

void reader_table::raise_floor(std::uint64_t e) {
  std::byte* f = map_.data() + h_floor;
  if (load<std::uint64_t>(f) < e) store<std::uint64_t>(f, e, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

std::vector<reader_epoch> reader_table::active_epochs() const {
  std::vector<reader_epoch> out;
  for (std::uint32_t i = 0, end = claimed(); i < end; ++i) {
    const std::byte* s = slot(i);
    if (load<std::uint32_t>(s + s_state, std::memory_order_seq_cst) != slot_active) continue;
    reader_epoch e;
    e.epoch = load<std::uint64_t>(s + s_epoch, std::memory_order_relaxed);
    e.dir_length = load<std::uint64_t>(s + s_dir_length, std::memory_order_relaxed);
    e.dir_home = load<std::uint32_t>(s + s_dir_home, std::memory_order_relaxed);
    e.dir_crc = load<std::uint32_t>(s + s_dir_crc, std::memory_order_relaxed);
    out.push_back(e);
  }
  std::sort(out.begin(), out.end(), [](const reader_epoch& a, const reader_epoch& b) { return a.epoch < b.epoch; });
  out.erase(std::unique(out.begin(), out.end(), [](const reader_epoch& a, const reader_epoch& b) { return a.epoch == b.epoch; }),
            out.end());
  return out;
}

std::vector<pinned_run> reader_table::reap() {
  std::lock_guard lk(mu_);
  {
    const mutex_hold held(*this);
    for (std::uint32_t i = 0, end = claimed(); i < end; ++i) {
      std::byte* s = slot(i);
      if (load<std::uint32_t>(s + s_state) == slot_free || owned_.count(i) != 0) continue;
      if (!os::held_elsewhere(file_->fd(), owner_base + i, path_)) store<std::uint32_t>(s + s_state, slot_free);
    }
  }
  std::vector<reader_epoch> epochs = active_epochs();
  std::vector<pinned_run> freed;
  if (epochs == last_reaped_) return freed;
  last_reaped_ = epochs;
  std::byte* h = map_.data();
  const std::uint32_t high = load<std::uint32_t>(h + h_high);
  for (std::uint32_t x = 0; x < high; ++x) {
    std::byte* e = entry(x);
    const auto kind = load<std::uint32_t>(e + e_kind);
    if (kind == 0) continue;
    const std::uint64_t lo = load<std::uint64_t>(e + e_lo), hi = load<std::uint64_t>(e + e_hi);
    const bool needed = std::any_of(epochs.begin(), epochs.end(),
                                    [&](const reader_epoch& r) { return lo <= r.epoch && r.epoch <= hi; });
    if (needed) continue;
    // Unlink x from its bucket's chain (one store), then move the sequence number before
    // the entry can be reused.
    std::byte* b = bucket(bucket_of(static_cast<pin_kind>(kind), load<std::uint64_t>(e + e_id), lay_->buckets));
    std::byte* link = b + 0;
    while (load<std::uint32_t>(link) != 0 && load<std::uint32_t>(link) != x + 1) {
      link = entry(load<std::uint32_t>(link) - 1) + e_next;
    }
    if (load<std::uint32_t>(link) == x + 1) store<std::uint32_t>(link, load<std::uint32_t>(e + e_next));
    add<std::uint32_t>(b + 4, 1);
    std::atomic_thread_fence(std::memory_order_release);
    const pinned_run r{load<std::uint32_t>(e + e_first), load<std::uint32_t>(e + e_grains)};
    store<std::uint32_t>(e + e_kind, 0);
    store<std::uint32_t>(e + e_next, load<std::uint32_t>(h + h_free));
    store<std::uint32_t>(h + h_free, x + 1);
    free_bits(r);
    freed.push_back(r);
  }
  return freed;
}

void reader_table::free_bits(const pinned_run& r) {
  std::byte* words = map_.data() + lay_->bitmap0;
  for (std::uint64_t g = r.first; g < r.first + r.grains; ++g) {
    std::byte* w = words + 8 * (g / 64);
    store<std::uint64_t>(w, load<std::uint64_t>(w) & ~(1ull << (g % 64)));
  }
  sub<std::uint64_t>(map_.data() + h_used, r.grains);
}

std::optional<pinned_run> reader_table::allocate(std::uint64_t bytes) {
  std::lock_guard lk(mu_);
  std::byte* h = map_.data();
  const std::uint64_t n = (bytes + grain - 1) / grain;
  const std::uint64_t total = lay_->grains;
  if (n == 0 || n > total) return std::nullopt;
  // The grains first (nothing is changed if there is no run), then the entry.
  std::byte* words = h + lay_->bitmap0;
  const auto bit = [&](std::uint64_t g) { return (load<std::uint64_t>(words + 8 * (g / 64)) >> (g % 64)) & 1u; };
  const std::uint64_t start = load<std::uint64_t>(h + h_cursor) % total;
  std::uint64_t run = 0, g = start;
  for (std::uint64_t looked = 0; looked < total + n; ++looked, g = (g + 1) % total) {
    if (g == 0) run = 0;  // runs do not wrap around the end of the file
    if (bit(g) != 0) {
      run = 0;
      continue;
    }
    if (++run < n) continue;
    const std::uint64_t first = g + 1 - n;
    for (std::uint64_t x = first; x <= g; ++x) {
      std::byte* w = words + 8 * (x / 64);
      store<std::uint64_t>(w, load<std::uint64_t>(w) | (1ull << (x % 64)));
    }
    store<std::uint64_t>(h + h_cursor, (g + 1) % total);
    add<std::uint64_t>(h + h_used, n);
    pinned_run r{first, static_cast<std::uint32_t>(n), 0};
    try {
      if (!reserve_entry(r.entry)) {
        free_bits(r);
        return std::nullopt;
      }
    } catch (...) {
      free_bits(r);
      throw;
    }
    return r;
  }
  return std::nullopt;
}

// Under mu_: an entry from the free stack, or the next one never used, whose bytes are
// allocated first (1 MiB at a time). False when every entry is in use.
bool reader_table::reserve_entry(std::uint32_t& x) {
  std::byte* h = map_.data();
  if (const std::uint32_t top = load<std::uint32_t>(h + h_free); top != 0) {
    store<std::uint32_t>(h + h_free, load<std::uint32_t>(entry(top - 1) + e_next));
    x = top - 1;
    return true;
  }
  const std::uint32_t high = load<std::uint32_t>(h + h_high);
  if (high >= lay_->entries) return false;
  const std::uint64_t need = lay_->entry0 + 40ull * (high + 1), have = load<std::uint64_t>(h + h_allocated);
  if (need > have) {
    const std::uint64_t to = std::min(lay_->size, round_up(need, 1u << 20));
    if (!os::allocate(file_->fd(), have, to - have, path_)) {
      throw error(errc::no_space, path_, "keep a copy for a reader", "no space for the reader table's pins");
    }
    store<std::uint64_t>(h + h_allocated, to);
  }
  store<std::uint32_t>(h + h_high, high + 1);
  x = high;
  return true;
}

void reader_table::free_run(const pinned_run& r) {
  std::lock_guard lk(mu_);
  free_bits(r);
  std::byte* h = map_.data();
  store<std::uint32_t>(entry(r.entry) + e_next, load<std::uint32_t>(h + h_free));
  store<std::uint32_t>(h + h_free, r.entry + 1);
}

void reader_table::insert(pin_kind kind, std::uint64_t id, std::uint64_t lo, std::uint64_t hi,
                          const pinned_run& r) {
  std::lock_guard lk(mu_);
  std::byte* h = map_.data();
  const std::uint32_t x = r.entry;  // reserved by allocate()
  std::byte* e = entry(x);
  std::byte* b = bucket(bucket_of(kind, id, lay_->buckets));
  store<std::uint64_t>(e + e_id, id, std::memory_order_relaxed);
  store<std::uint64_t>(e + e_lo, lo, std::memory_order_relaxed);
  store<std::uint64_t>(e + e_hi, hi, std::memory_order_relaxed);
  store<std::uint32_t>(e + e_first, static_cast<std::uint32_t>(r.first), std::memory_order_relaxed);
  store<std::uint32_t>(e + e_grains, r.grains, std::memory_order_relaxed);
  store<std::uint32_t>(e + e_kind, static_cast<std::uint32_t>(kind), std::memory_order_relaxed);
  store<std::uint32_t>(e + e_next, load<std::uint32_t>(b + 0), std::memory_order_relaxed);
  store<std::uint32_t>(b + 0, x + 1);  // release: the entry's bytes before its link
  add<std::uint64_t>(h + h_pins, 1);
}

std::uint32_t reader_table::expire(std::uint64_t epoch, expiry why) {
  std::uint32_t n = 0;
  for (std::uint32_t i = 0, end = claimed(); i < end; ++i) {
    std::byte* s = slot(i);
    if (load<std::uint32_t>(s + s_state) != slot_active || load<std::uint64_t>(s + s_epoch) != epoch) continue;
    store<std::uint32_t>(s + s_reason, static_cast<std::uint32_t>(why), std::memory_order_relaxed);
    store<std::uint32_t>(s + s_state, slot_expired, std::memory_order_seq_cst);
    ++n;
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
  add<std::uint64_t>(map_.data() + h_expired, n);
  return n;
}

void reader_table::exclude(exclusion why, const std::string& dir, const char* op) {
  const mutex_hold held(*this);
  const std::vector<reader_record> live = readers();
  if (!live.empty()) {
    std::string who;
    for (const reader_record& r : live) {
      if (!who.empty()) who += ", ";
      who += "pid " + std::to_string(r.pid) + " at epoch " + std::to_string(r.epoch);
    }
    throw error(errc::locked, dir, op,
                "datastore " + dir + " has " + std::to_string(live.size()) + " reader" +
                    (live.size() == 1 ? "" : "s") + " attached (" + who + ")" +
                    (why == exclusion::direct ? ": the kernel-mmap backend cannot serve concurrent readers" : ""));
  }
  if (!os::try_lock(file_->fd(), static_cast<std::uint64_t>(why), os::lock_kind::write, path_)) {
    throw error(errc::locked, dir, op, "datastore " + dir + " is being removed or mapped by another process");
  }
}

void reader_table::admit(exclusion why) noexcept {
  try {
    os::unlock(file_->fd(), static_cast<std::uint64_t>(why), path_);
  } catch (...) {  // closing the file releases it anyway
  }
}

void reader_table::adopt_writer_state() {
  std::lock_guard lk(mu_);
  std::byte* h = map_.data();
  std::byte* words = h + lay_->bitmap0;
  const std::uint64_t nwords = (lay_->grains + 63) / 64;
  for (std::uint64_t w = 0; w < nwords; ++w) store<std::uint64_t>(words + 8 * w, 0, std::memory_order_relaxed);
  std::uint64_t used = 0;
  std::uint32_t free_head = 0;
  const std::uint32_t high = std::min(load<std::uint32_t>(h + h_high), lay_->entries);
  for (std::uint32_t x = high; x-- > 0;) {
    std::byte* e = entry(x);
    if (load<std::uint32_t>(e + e_kind) == 0) {
      store<std::uint32_t>(e + e_next, free_head);
      free_head = x + 1;
      continue;
    }
    const std::uint64_t first = load<std::uint32_t>(e + e_first), n = load<std::uint32_t>(e + e_grains);
    for (std::uint64_t g = first; g < std::min(first + n, lay_->grains); ++g) {
      std::byte* w = words + 8 * (g / 64);
      store<std::uint64_t>(w, load<std::uint64_t>(w) | (1ull << (g % 64)));
    }
    used += n;
  }
  store<std::uint32_t>(h + h_free, free_head);
  store<std::uint64_t>(h + h_used, used);
  last_reaped_.clear();  // the next reap looks at every pin
}

void reader_table::set_floor(std::uint64_t e) {
  store<std::uint64_t>(map_.data() + h_floor, e, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

std::vector<reader_record> reader_table::readers() const {
  std::vector<reader_record> out;
  for (std::uint32_t i = 0, end = claimed(); i < end; ++i) {
    const std::byte* s = slot(i);
    const std::uint32_t st = load<std::uint32_t>(s + s_state);
    if (st == slot_free) continue;
    if (owned_.count(i) == 0 && !os::held_elsewhere(file_->fd(), owner_base + i, path_)) continue;
    reader_record r;
    r.epoch = load<std::uint64_t>(s + s_epoch);
    r.pid = load<std::uint32_t>(s + s_pid);
    r.since_unix_ns = load<std::uint64_t>(s + s_since);
    r.expired = st == slot_expired;
    r.pinned_bytes = pinned_bytes_for(r.epoch);
    out.push_back(r);
  }
  return out;
}

std::uint64_t reader_table::pinned_bytes_for(std::uint64_t epoch) const {
  std::uint64_t total = 0;
  const std::uint32_t high = load<std::uint32_t>(map_.data() + h_high);
  for (std::uint32_t x = 0; x < high; ++x) {
    const std::byte* e = entry(x);
    if (load<std::uint32_t>(e + e_kind) == 0) continue;
    if (load<std::uint64_t>(e + e_lo) <= epoch && epoch <= load<std::uint64_t>(e + e_hi)) {
      total += load<std::uint32_t>(e + e_grains) * grain;
    }
  }
  return total;
}

reader_table::counters reader_table::stats() const {
  const std::byte* h = map_.data();
  counters c;
  c.pinned_bytes = load<std::uint64_t>(h + h_used) * grain;
  c.pins = load<std::uint64_t>(h + h_pins);
  c.expired = load<std::uint64_t>(h + h_expired);
  return c;
}

std::vector<reader_record> reader_table::list(io::engine& eng, const std::string& dir, const uuid& id) {
  const std::string path = join(dir, readers_name);
  if (!eng.exists(path)) return {};
  std::unique_ptr<reader_table> t(new reader_table(eng.open(path, io::open_mode::read_only), path, dir));
  for (int waited_ms = 0; !os::try_lock(t->file_->fd(), attach_byte, os::lock_kind::read, path); ++waited_ms) {
    if (waited_ms >= 30000) return {};  // a process resetting it for 30 s: nothing to list
    ::usleep(1000);
  }
  try {
    t->map_and_check({0, id, 0}, false);
  } catch (const error&) {
    return {};  // no table of this datastore's: nobody reads it through one
  }
  return t->readers();
}

}  // namespace pheap::store
