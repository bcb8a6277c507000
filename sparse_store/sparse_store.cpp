// sparse_store/sparse_store.cpp — the store: write path, read path, commit, checkpoint,
// recovery, snapshot. The on-disk format and the reasoning behind every sync are in FORMAT.md;
// this comment is the map of the in-memory state.
//
// State (guarded by mu_ unless noted):
//
//   sb_        the commit record of the last committed epoch E (epoch, root, geometry, uuid).
//   cur_       journal of epoch E+1: every write_pages()/discard() since the last commit is a
//              record in it. Its index maps page → newest record; bits_ mirror it.
//   sealed_    journal of epoch E while its checkpoint runs (or, read-only, the committed
//              journal replayed in memory). Reads consult cur_, then sealed_, then segments.
//   prev_      journal of epoch E after its checkpoint finished: still needed by recovery
//              (superblock E names it) until superblock E+1 is durable, then unlinked.
//   bits_      may_have_data bitmap (atomic words; updated under mu_).
//   segs_      segment files (own lock, always taken after mu_).
//
// Writers reserve journal space under mu_ (offset += record length, inflight += 1), write
// without any lock, then publish index entries under mu_ and drop inflight. Pages that
// already have a published slot in cur_ are rewritten in place instead of appended (under
// the record's own mutex; FORMAT.md "In-place rewrites"), which bounds cur_ by the distinct
// pages of the epoch. commit() swaps cur_
// for a fresh journal under mu_ (the seal) and waits until the sealed journal has no record in
// flight: a write_pages() racing with commit() lands wholly in the sealed epoch (it reserved
// before the seal) or wholly in the next (after), never torn.
//
// commit_mu_ serialises commit() and snapshot() and owns ckpt_ (the checkpoint thread).
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <thread>
#include <unordered_map>
#include <utility>

#include "pheap/crc32c.hpp"
#include "pheap/error.hpp"
#include "pheap/sparse_store.hpp"
#include "journal.hpp"
#include "layout.hpp"
#include "page_bitmap.hpp"
#include "segment_set.hpp"
#include "superblock.hpp"

namespace pheap {

namespace store {
namespace {

using clock = std::chrono::steady_clock;

// A pages record of the CURRENT journal, kept so its slots can be rewritten in place.
struct record_info {
  std::mutex mu;                  // serialises in-place rewrites of this record (image+header)
  std::uint64_t offset = 0;       // of the header in the journal
  std::vector<std::byte> header;  // the header as last written (entry CRCs + header CRC)
};

// The newest image slot of a page in the current journal: entry `idx` of record `rec`.
struct slot_ref {
  record_info* rec;
  std::uint32_t idx;
};

// One journal file and its index. The file is created lazily by the first record.
struct journal_state {
  journal_state(std::uint64_t e, std::string p) : epoch(e), path(std::move(p)) {}
  std::uint64_t epoch;
  std::string path;
  std::shared_ptr<io::file> file;  // null until the first record (nothing to commit)
  bool created = false;            // created by us: its directory entry needs a sync_dir
  std::uint64_t length = 0;        // bytes reserved; all written once inflight == 0
  unsigned inflight = 0;           // write_pages/discard calls reserved but not yet finished
  journal_index index;
  // Current journal only (cleared at the seal): the records and, per page whose newest entry
  // is a published image slot, that slot. A write of such a page overwrites the slot in
  // place instead of appending (FORMAT.md "In-place rewrites"). The vector and the map are
  // guarded by mu_, a record's header by its own mutex.
  std::vector<std::unique_ptr<record_info>> records;
  std::unordered_map<std::uint64_t, slot_ref> slots;
  // Pages whose in-place rewrite failed (the store is poisoned): the slot holds the old
  // image, the new one or a mix. Reads verify the image against both CRCs (old, new).
  std::unordered_map<std::uint64_t, std::pair<std::uint32_t, std::uint32_t>> damaged;
};

std::string parent_of(const std::string& path) {
  std::filesystem::path p(path);
  while (p.has_relative_path() && !p.has_filename()) p = p.parent_path();  // strip "dir/"
  auto parent = p.parent_path();
  return parent.empty() ? "." : parent.string();
}

// Takes the flock that enforces one writer or many readers; throws errc::locked on conflict.
// The lock lives on its own descriptor of pheap.super (opened read-only, never written), not
// on the one used for I/O: a flock belongs to the open file description, and any duplicate
// of an I/O descriptor (the fault engine keeps one per written file for its power-cut model)
// would otherwise keep the datastore locked after the store is gone.
void lock_super(io::file& f, const std::string& dir, bool read_only) {
  const int how = (read_only ? LOCK_SH : LOCK_EX) | LOCK_NB;
  while (::flock(f.fd(), how) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK) {
      throw error(errc::locked, dir, read_only ? "open read-only" : "open",
                  read_only ? "datastore " + dir + " is open read-write by another process"
                            : "datastore " + dir +
                                  " is open by another process (read-write or read-only)");
    }
    throw_errno(errno, f.path(), "flock");
  }
}

// --- creation ------------------------------------------------------------------------------

// Last path component of `path`, trailing slashes ignored ("a/b/" → "b").
std::string base_name(const std::string& path) {
  std::filesystem::path p(path);
  while (p.has_relative_path() && !p.has_filename()) p = p.parent_path();
  return p.filename().string();
}

// Prefix of the temporary directories create() builds `name` in: ".<name>.creating-".
std::string creation_prefix(const std::string& name) { return "." + name + ".creating-"; }

// create() may target a missing path or an existing empty directory (replaced by the rename).
// Returns true for the latter; throws already_exists otherwise.
bool check_create_target(io::engine& eng, const std::string& dir) {
  if (!eng.exists(dir)) return false;
  std::vector<std::string> names;
  try {
    names = eng.list_dir(dir);
  } catch (const error& e) {
    if (e.sys_errno() == ENOTDIR) {
      throw error(errc::already_exists, dir, "create", "path exists and is not a directory");
    }
    throw;
  }
  if (!names.empty()) {
    throw error(errc::already_exists, dir, "create", "directory exists and is not empty");
  }
  return true;
}

// A directory descriptor holding LOCK_EX on a creation directory: an in-progress create()
// holds it, so a concurrent create() of the same name never removes a live temporary.
struct dir_lock {
  int fd = -1;
  dir_lock() = default;
  dir_lock(dir_lock&& o) noexcept : fd(std::exchange(o.fd, -1)) {}
  dir_lock& operator=(dir_lock&& o) noexcept {
    if (this != &o) {
      reset();
      fd = std::exchange(o.fd, -1);
    }
    return *this;
  }
  ~dir_lock() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  // Opens and locks `path` without blocking; false if it is gone, locked or already removed.
  bool try_lock(const std::string& path) {
    reset();
    fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return false;
    int rc;
    do {
      rc = ::flock(fd, LOCK_EX | LOCK_NB);
    } while (rc != 0 && errno == EINTR);
    struct stat st {};
    if (rc != 0 || ::fstat(fd, &st) != 0 || st.st_nlink == 0) {
      reset();
      return false;
    }
    return true;
  }
};

struct creation_dir {
  std::string path;
  dir_lock lock;
};

// Removes a creation directory and the files in it (best effort; a leftover is harmless).
void remove_creation_dir(io::engine& eng, const std::string& path) noexcept {
  try {
    for (const auto& n : eng.list_dir(path)) eng.remove_file(join(path, n));
    eng.remove_dir(path);
  } catch (const error&) {
  }
}

// Removes the ".<name>.creating-*" directories a crashed create() of `name` left in `parent`.
// Skips any that a live create() holds locked.
void remove_stale_creations(io::engine& eng, const std::string& parent, const std::string& name) {
  const std::string prefix = creation_prefix(name);
  std::vector<std::string> names;
  try {
    names = eng.list_dir(parent);
  } catch (const error&) {
    return;  // the mkdir below reports an unusable parent properly
  }
  for (const auto& n : names) {
    if (n.size() <= prefix.size() || n.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string path = join(parent, n);
    dir_lock l;
    if (l.try_lock(path)) remove_creation_dir(eng, path);
  }
}

// Makes and locks a fresh "<parent>/.<name>.creating-XXXXXX".
creation_dir make_creation_dir(io::engine& eng, const std::string& parent,
                               const std::string& name) {
  static constexpr char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  for (int attempt = 0; attempt < 100; ++attempt) {
    const uuid r = new_uuid();
    std::string suffix;
    for (int i = 0; i < 6; ++i) suffix += alphabet[r[static_cast<std::size_t>(i)] % 36];
    creation_dir c;
    c.path = join(parent, creation_prefix(name) + suffix);
    try {
      eng.create_dir(c.path);
    } catch (const error& e) {
      if (e.code() == errc::already_exists) continue;
      throw;
    }
    // Lost only to a concurrent remove_stale_creations() that got there first: try a new name.
    if (c.lock.try_lock(c.path)) return c;
  }
  throw error(errc::io, parent, "create", "could not make a temporary creation directory for '" +
                                              name + "' after 100 attempts");
}

// Takes a just-renamed datastore back out of `dir` after a failure that left its name's
// durability unknown; restores the empty directory create() replaced, if any.
void undo_creation(io::engine& eng, const std::string& dir, const std::string& parent,
                   const std::string& name, bool restore_empty_dir) noexcept {
  try {
    creation_dir c = make_creation_dir(eng, parent, name);
    eng.rename(dir, c.path);  // over the empty creation directory
    remove_creation_dir(eng, c.path);
    if (restore_empty_dir) eng.create_dir(dir);
  } catch (const error&) {
  }
}

class store_impl final : public sparse_store {
 public:
  store_impl(std::shared_ptr<io::engine> eng, std::string dir, bool read_only,
             std::unique_ptr<io::file> lock, std::unique_ptr<io::file> super, superblock sb)
      : eng_(std::move(eng)),
        dir_(std::move(dir)),
        read_only_(read_only),
        lock_(std::move(lock)),
        super_(std::move(super)),
        sb_(std::move(sb)),
        page_count_(sb_.capacity / sb_.page_size),
        bits_(page_count_),
        segs_(*eng_, dir_, sb_.id, sb_.page_size, sb_.segment_size, sb_.segment_count(),
              read_only),
        cur_(new_journal(sb_.epoch + 1)),
        zero_crc_(crc32c(std::vector<std::byte>(sb_.page_size).data(), sb_.page_size)) {}

  ~store_impl() override {
    std::lock_guard cl(commit_mu_);
    if (ckpt_.joinable()) ckpt_.join();
  }

  // Open-time recovery; see FORMAT.md "Recovery". Leaves the store in the state commit()
  // leaves it in once the checkpoint finished: segments == epoch E (read-write), or the
  // committed journal served from memory (read-only).
  void recover() {
    const std::vector<std::string> names = eng_->list_dir(dir_);
    segs_.open_existing(sb_, names);
    segs_.mark_data(bits_);

    const std::uint64_t e = sb_.epoch;
    if (sb_.journal_length > 0) {
      auto j = new_journal(e);
      if (!eng_->exists(j->path)) {
        throw error(errc::corrupt, j->path, "open",
                    "missing " + journal_name(e) + " required by epoch " + std::to_string(e));
      }
      j->file = eng_->open(j->path, io::open_mode::read_only);
      j->length = sb_.journal_length;
      journal_visitor v;
      v.on_pages = [&](const std::vector<std::uint64_t>& pages, std::uint64_t image_off) {
        for (std::size_t i = 0; i < pages.size(); ++i) {
          bits_.set(pages[i]);
          j->index.put(pages[i], image_off + i * sb_.page_size);
        }
      };
      v.on_discard = [&](std::uint64_t rec_off, std::uint64_t first, std::uint64_t count) {
        discard_in_index(*j, rec_off, first, count);
      };
      scan_journal(*eng_, *j->file, j->path, sb_.journal_id, e, sb_.journal_length,
                   sb_.page_size, page_count_, v);
      if (read_only_) {
        sealed_ = j;  // served from memory; nothing on disk changes
      } else {
        // Replay is idempotent: the segments may already hold some or all of it.
        stat_ckpt_pages_ += segs_.checkpoint(*j->file, j->index.sorted(), e);
        j->index = journal_index{};
        prev_ = j;
      }
    }
    if (!read_only_) {
      // Journals of other epochs are uncommitted leftovers (> E) or stale (< E, already
      // checkpointed). Removing them needs no sync: recovery never reads a journal the
      // current superblock does not name, and the next commit syncs the directory anyway.
      for (const auto& n : names) {
        const auto je = parse_journal_name(n);
        if (je && (*je != e || sb_.journal_length == 0)) eng_->remove_file(join(dir_, n));
      }
    }
  }

  // --- data path ---------------------------------------------------------------------------

  // Not rejected on a poisoned store: a failed write or sync publishes nothing, so every
  // index entry still points at fully written bytes (or, after a failed in-place rewrite, at
  // a slot verified below) and reads keep returning the newest good content. The pager
  // depends on this: it keeps serving page faults after an eviction hit ENOSPC.
  void read_pages(std::span<const page_read> batch) override { read_impl(batch, true); }

  // Pages read from a segment are verified against its CRC table; `retry` allows one more
  // lookup of a page that fails (see below).
  void read_impl(std::span<const page_read> batch, bool retry) {
    for (const auto& r : batch) check_page(r.page, r.buf, "read_pages");
    const std::uint32_t ps = sb_.page_size;
    std::vector<io::read_request> reqs;
    std::vector<std::shared_ptr<io::file>> hold;  // keeps files open across the unlocked read
    struct verify {
      std::size_t req;
      std::uint64_t page;
      std::uint32_t old_crc, new_crc;
    };
    std::vector<verify> verifies;  // images of failed in-place rewrites
    struct segment_read {
      std::size_t req;
      std::size_t in_batch;
    };
    std::vector<segment_read> from_segment;  // verified against the segment's CRC table
    std::uint64_t zeros = 0;
    {
      std::shared_lock lk(mu_);
      for (std::size_t b = 0; b < batch.size(); ++b) {
        const page_read& r = batch[b];
        // Newest first: this epoch's journal, the journal being checkpointed, the segments.
        const bool has_data = bits_.test(r.page);
        const std::uint64_t* entry = nullptr;
        journal_state* j = nullptr;
        if (has_data) {
          j = cur_.get();
          entry = j->index.find(r.page);
          if (entry == nullptr && sealed_) {
            j = sealed_.get();
            entry = j->index.find(r.page);
          }
        }
        if (!has_data || (entry != nullptr && journal_index::is_zero(*entry))) {
          std::memset(r.buf, 0, ps);
          ++zeros;
        } else if (entry != nullptr) {
          if (!j->damaged.empty()) {
            if (auto d = j->damaged.find(r.page); d != j->damaged.end()) {
              verifies.push_back({reqs.size(), r.page, d->second.first, d->second.second});
            }
          }
          reqs.push_back({j->file.get(), journal_index::offset(*entry), r.buf, ps});
          hold.push_back(j->file);
        } else if (auto f = segs_.get(r.page / segs_.pages_per_segment())) {
          from_segment.push_back({reqs.size(), b});
          reqs.push_back({f.get(), (r.page % segs_.pages_per_segment()) * ps, r.buf, ps});
          hold.push_back(std::move(f));
        } else {
          // The bit is set by a write_pages() still in flight on another thread and the page
          // had no data before it: the previous content, zeros, is what this read returns.
          std::memset(r.buf, 0, ps);
          ++zeros;
        }
      }
    }
    if (!reqs.empty()) eng_->read(reqs);
    for (const auto& v : verifies) {
      const std::uint32_t c = crc32c(reqs[v.req].buf, ps);
      if (c != v.old_crc && c != v.new_crc) {
        throw error(errc::io, hold[v.req]->path(), "read_pages",
                    "page " + std::to_string(v.page) +
                        " was lost by a failed in-place rewrite (" + poison_cause() + ")");
      }
    }
    for (const auto& s : from_segment) {
      const page_read& r = batch[s.in_batch];
      if (segs_.verify(r.page, r.buf)) continue;
      // A write of the page committed and checkpointed while this read was in flight can
      // mix two versions (a race the pager never creates): look the page up once more.
      // Damage on disk fails again.
      if (!retry) throw segs_.verify_error(r.page, r.buf, "read_pages");
      read_impl(std::span<const page_read>(&r, 1), false);
    }
    stat_pages_read_ += reqs.size();
    stat_zero_pages_ += zeros;
  }

  void write_pages(std::span<const page_write> batch) override {
    check_usable("write_pages");
    check_writable("write_pages");
    if (batch.empty()) return;
    for (const auto& w : batch) check_page(w.page, w.buf, "write_pages");
    const std::uint32_t ps = sb_.page_size;

    // A page listed twice: its last occurrence wins (as the record order did before), and
    // only that one is written, so no two requests of the engine batch overlap.
    std::vector<std::size_t> keep;
    keep.reserve(batch.size());
    if (batch.size() == 1) {
      keep.push_back(0);
    } else {
      std::unordered_map<std::uint64_t, std::size_t> last;
      last.reserve(batch.size());
      for (std::size_t i = 0; i < batch.size(); ++i) last[batch[i].page] = i;
      for (std::size_t i = 0; i < batch.size(); ++i) {
        if (last[batch[i].page] == i) keep.push_back(i);
      }
    }
    // Checksums are computed outside the lock.
    std::vector<std::uint32_t> crcs(keep.size());
    for (std::size_t k = 0; k < keep.size(); ++k) crcs[k] = crc32c(batch[keep[k]].buf, ps);

    // Under mu_: split into pages that already own a slot in the current journal (rewritten
    // in place) and fresh pages (one appended record); reserve the record; count the call as
    // in flight so the seal in commit() waits for all of it.
    struct rewrite {
      std::size_t k;  // index into keep/crcs
      slot_ref slot;
    };
    std::vector<rewrite> rewrites;
    std::vector<std::size_t> fresh;  // indices into keep/crcs
    std::shared_ptr<journal_state> j;
    record_info* rec = nullptr;
    std::uint64_t off = 0;
    std::size_t hsize = 0;
    {
      std::unique_lock lk(mu_);
      j = cur_;
      for (std::size_t k = 0; k < keep.size(); ++k) {
        auto it = j->slots.find(batch[keep[k]].page);
        if (it != j->slots.end()) {
          rewrites.push_back({k, it->second});
        } else {
          fresh.push_back(k);
        }
      }
      if (!fresh.empty()) {
        ensure_journal_file(*j);
        hsize = pages_header_size(fresh.size());
        off = j->length;
        j->length += hsize + static_cast<std::uint64_t>(fresh.size()) * ps;
        j->records.push_back(std::make_unique<record_info>());
        rec = j->records.back().get();
        rec->offset = off;
      }
      ++j->inflight;
      // Set at reservation, so a discard reserved after us sees the page and supersedes us.
      for (std::size_t k : fresh) bits_.set(batch[keep[k]].page);
    }

    std::vector<io::write_request> reqs;
    reqs.reserve(fresh.size() + 1 + 3 * rewrites.size());
    std::vector<std::uint64_t> pages(fresh.size());
    if (rec != nullptr) {
      // The new record's header; it is published (and so rewritable) only after the write.
      std::vector<std::uint32_t> fcrcs(fresh.size());
      for (std::size_t i = 0; i < fresh.size(); ++i) {
        pages[i] = batch[keep[fresh[i]]].page;
        fcrcs[i] = crcs[fresh[i]];
      }
      rec->header.resize(hsize);
      encode_pages_header(rec->header.data(), sb_.id, j->epoch, fresh.size(), pages.data(),
                          fcrcs.data());
      reqs.push_back({j->file.get(), off, rec->header.data(), hsize});
      for (std::size_t i = 0; i < fresh.size(); ++i) {
        reqs.push_back({j->file.get(), off + hsize + i * ps, batch[keep[fresh[i]]].buf, ps});
      }
    }

    // In-place rewrites: lock every record involved (by offset: no deadlock between two
    // batches), update the entry CRCs and the header CRC in DRAM, and write the image, the
    // entry and the header CRC. Held until the engine call returns, so the header on disk
    // always matches the last image written into each slot.
    std::vector<record_info*> locked;
    std::vector<std::byte> entry_bufs(rewrites.size() * record_entry_size);
    std::vector<std::pair<std::uint64_t, std::pair<std::uint32_t, std::uint32_t>>> changed;
    if (!rewrites.empty()) {
      std::sort(rewrites.begin(), rewrites.end(), [](const rewrite& a, const rewrite& b) {
        return a.slot.rec->offset < b.slot.rec->offset;
      });
      for (const auto& r : rewrites) {
        if (locked.empty() || locked.back() != r.slot.rec) {
          r.slot.rec->mu.lock();
          locked.push_back(r.slot.rec);
        }
      }
      changed.reserve(rewrites.size());
      for (std::size_t x = 0; x < rewrites.size(); ++x) {
        const auto& r = rewrites[x];
        record_info& R = *r.slot.rec;
        const std::size_t e = record_fixed_size + r.slot.idx * record_entry_size;
        const std::uint64_t page = batch[keep[r.k]].page;
        changed.push_back({page, {get<std::uint32_t>(R.header.data(), e + 8), crcs[r.k]}});
        put<std::uint32_t>(R.header.data(), e + 8, crcs[r.k]);
        std::memcpy(entry_bufs.data() + x * record_entry_size, R.header.data() + e,
                    record_entry_size);
        const std::uint64_t image =
            R.offset + R.header.size() + static_cast<std::uint64_t>(r.slot.idx) * ps;
        reqs.push_back({j->file.get(), image, batch[keep[r.k]].buf, ps});
        reqs.push_back({j->file.get(), R.offset + e, entry_bufs.data() + x * record_entry_size,
                        record_entry_size});
      }
      for (record_info* R : locked) {
        const std::size_t crc_off = R->header.size() - record_trailer_size;
        put<std::uint32_t>(R->header.data(), crc_off, crc32c(R->header.data(), crc_off));
        reqs.push_back({j->file.get(), R->offset + crc_off, R->header.data() + crc_off,
                        record_trailer_size});
      }
    }

    try {
      eng_->write(reqs);  // one engine call per batch
    } catch (const error& e) {
      for (record_info* R : locked) R->mu.unlock();
      // The appended record is never published (its pages keep reading their previous
      // version); rewritten slots are marked damaged. The epoch cannot commit any more.
      poison("journal append failed: " + std::string(e.what()));
      {
        std::unique_lock lk(mu_);
        for (const auto& c : changed) j->damaged.insert_or_assign(c.first, c.second);
      }
      finish_record(*j, nullptr, nullptr, 0);
      throw;
    }
    for (record_info* R : locked) R->mu.unlock();
    finish_record(*j, rec != nullptr ? &pages : nullptr, rec, off + hsize);
    stat_pages_written_ += keep.size();
    if (rec != nullptr) stat_journal_bytes_ += hsize + static_cast<std::uint64_t>(fresh.size()) * ps;
  }

  void discard(std::uint64_t first_page, std::uint64_t count) override {
    check_usable("discard");
    check_writable("discard");
    if (count == 0) return;
    if (first_page >= page_count_ || count > page_count_ - first_page) {
      throw error(errc::invalid_argument, dir_, "discard",
                  "pages [" + std::to_string(first_page) + ", +" + std::to_string(count) +
                      ") exceed the capacity of " + std::to_string(page_count_) + " pages");
    }
    std::byte header[discard_header_size];
    std::vector<discard_undo> undo;
    std::shared_ptr<journal_state> j;
    std::uint64_t off;
    {
      std::unique_lock lk(mu_);
      j = cur_;
      ensure_journal_file(*j);
      off = j->length;
      j->length += discard_header_size;
      ++j->inflight;
      discard_in_index(*j, off, first_page, count, &undo);  // visible to reads from now on
    }
    encode_discard_header(header, sb_.id, j->epoch, first_page, count);
    try {
      eng_->write_at(*j->file, off, header, sizeof header);
    } catch (const error& e) {
      // A failed write publishes nothing: reads see the pages' previous content again.
      poison("journal append failed: " + std::string(e.what()));
      {
        std::unique_lock lk(mu_);
        undo_discard(*j, off, undo);
      }
      finish_record(*j, nullptr, nullptr, 0);
      throw;
    }
    finish_record(*j, nullptr, nullptr, 0);
    stat_journal_bytes_ += discard_header_size;
  }

  bool may_have_data(std::uint64_t page) const override {
    return page < page_count_ && bits_.test(page);
  }

  // From DRAM only: the entry CRC of the page's image in the current journal (its record
  // headers are kept), zeros for a page without data or discarded, else the segment's CRC
  // table when loaded. nullopt: the newest image is in the journal being checkpointed (its
  // headers are not kept), its in-place rewrite failed, or the table is not loaded yet.
  std::optional<std::uint32_t> page_crc(std::uint64_t page) const override {
    if (page >= page_count_) return std::nullopt;
    std::shared_lock lk(mu_);
    if (!bits_.test(page)) return zero_crc_;
    if (const std::uint64_t* e = cur_->index.find(page)) {
      if (journal_index::is_zero(*e)) return zero_crc_;
      if (cur_->damaged.count(page) != 0) return std::nullopt;
      const auto it = cur_->slots.find(page);
      if (it == cur_->slots.end()) return std::nullopt;
      record_info& rec = *it->second.rec;
      std::lock_guard rl(rec.mu);  // an in-place rewrite of the slot finishes first
      return get<std::uint32_t>(rec.header.data(),
                                record_fixed_size + it->second.idx * record_entry_size + 8);
    }
    if (sealed_ && sealed_->index.find(page) != nullptr) return std::nullopt;
    const std::optional<std::uint32_t> t = segs_.loaded_crc(page);
    if (t && *t == 0) return zero_crc_;
    return t;
  }

  // --- commit ------------------------------------------------------------------------------

  std::uint64_t commit(std::span<const std::byte> root) override {
    const auto t0 = clock::now();
    std::lock_guard cl(commit_mu_);
    check_usable("commit");
    check_writable("commit");
    if (root.size() > max_root_size) {
      throw error(errc::invalid_argument, dir_, "commit",
                  "root blob of " + std::to_string(root.size()) + " bytes exceeds " +
                      std::to_string(max_root_size));
    }
    // Superblock E+1 may only be written once epoch E's checkpoint is durable: recovery from
    // E+1 replays journal E+1 only and trusts the segments for everything older.
    wait_checkpoint("commit");

    // Seal: new writes go to the next journal; wait for records already reserved in this one.
    std::shared_ptr<journal_state> j;
    {
      std::unique_lock lk(mu_);
      j = cur_;
      cur_ = new_journal(j->epoch + 1);
      if (j->file) sealed_ = j;
      idle_.wait(lk, [&] { return j->inflight == 0; });
      // Sealed: never rewritten again (new writes find their slots in the new cur_).
      j->slots.clear();
      j->records.clear();
    }
    check_usable("commit");  // a sealed record whose write failed poisoned the store

    superblock next = sb_;  // sb_ changes only here, under commit_mu_
    next.epoch = j->epoch;
    next.journal_length = j->file ? j->length : 0;
    next.journal_id = sb_.id;  // every record of journal-(E+1) was written by us
    next.root.assign(root.begin(), root.end());
    next.segments = segs_.present();
    next.segment_digest = segs_.digest();  // segments == epoch E (checkpoint waited for)
    try {
      if (j->file) {
        eng_->sync(*j->file);                    // the epoch's data, before the record naming it
        if (j->created) eng_->sync_dir(dir_);  // ...and the journal's name
      }
      write_slot(*eng_, *super_, next);
      eng_->sync(*super_);  // the commit point
    } catch (const error& e) {
      poison("commit of epoch " + std::to_string(next.epoch) + " failed: " + e.what());
      throw;
    }
    {
      // Only the per-commit fields change: the geometry and uuid (read without mu_ by the
      // I/O paths and the accessors) are written once, at open, and never again.
      std::unique_lock lk(mu_);
      sb_.epoch = next.epoch;
      sb_.journal_length = next.journal_length;
      sb_.journal_id = next.journal_id;
      sb_.root = std::move(next.root);
      sb_.segments = std::move(next.segments);
      sb_.segment_digest = next.segment_digest;
    }
    // Journal E is checkpointed and no durable superblock names it any more. A failure to
    // unlink it is harmless: the next read-write open removes stale journals.
    if (prev_) {
      try {
        eng_->remove_file(prev_->path);
      } catch (const error&) {
      }
      prev_.reset();
    }
    if (j->file) {
      prev_ = j;
      ckpt_ = std::thread([this, j] { run_checkpoint(j); });
    }
    ++stat_commits_;
    stat_commit_ns_ += static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - t0).count());
    return next.epoch;
  }

  // --- snapshot ----------------------------------------------------------------------------

  // Every failure names the destination the caller passed (an I/O error inside the copy
  // would otherwise name the temporary directory or dst's parent), and keeps its cause.
  void snapshot(const std::string& dst) override {
    try {
      snapshot_impl(dst);
    } catch (const error& e) {
      if (e.path() == dst) throw;
      throw error(e.code(), dst, "snapshot", e.what(), e.sys_errno());
    }
  }

  void snapshot_impl(const std::string& dst) {
    std::lock_guard cl(commit_mu_);  // no commit, hence no checkpoint, until we are done
    check_usable("snapshot");
    wait_checkpoint("snapshot");
    // Now (read-write) the segments hold exactly epoch sb_.epoch; writers keep appending to
    // cur_, which the snapshot ignores. Read-only: segments + the committed journal do.
    const superblock src = sb_;
    // Built under a temporary name next to dst and renamed into place once durable, exactly
    // like create(): a crash leaves dst absent or a complete datastore (FORMAT.md "Snapshot").
    const std::string name = base_name(dst);
    if (name.empty() || name == "." || name == "..") {
      throw error(errc::invalid_argument, dst, "snapshot",
                  "the snapshot path must end in a directory name (not '.', '..' or '/')");
    }
    if (eng_->exists(dst)) {
      throw error(errc::already_exists, dst, "snapshot", "destination already exists");
    }
    const std::string parent = parent_of(dst);
    remove_stale_creations(*eng_, parent, name);
    creation_dir tmp;
    try {
      tmp = make_creation_dir(*eng_, parent, name);
    } catch (const error& e) {
      if (e.code() != errc::not_found) throw;
      throw error(errc::not_found, dst, "snapshot",
                  "parent directory " + parent + " does not exist", e.sys_errno());
    }
    try {
      superblock out = src;
      out.id = new_uuid();
      out.segments = segs_.present();
      out.segment_digest = segs_.digest();  // the touch epochs the copies' headers get
      for (std::uint64_t i = 0; i < out.segments.size(); ++i) {
        if (out.segments[i]) {
          const std::string copy = join(tmp.path, segment_name(i));
          eng_->clone_file(segs_.path_of(i), copy);
          segs_.rewrite_identity(copy, i, out.id);  // its header names the snapshot
        }
      }
      if (read_only_ && src.journal_length > 0) {
        eng_->clone_file(join(dir_, journal_name(src.epoch)),
                         join(tmp.path, journal_name(src.epoch)));
      } else {
        out.journal_length = 0;  // segments already hold the whole epoch
        out.journal_id = out.id;
      }
      auto f = eng_->open(join(tmp.path, super_name), io::open_mode::create_new);
      std::vector<std::byte> both(super_file_size);
      const auto slot = encode_slot(out);
      std::memcpy(both.data() + (out.epoch % slot_count) * slot_size, slot.data(), slot_size);
      eng_->write_at(*f, 0, both.data(), both.size());
      eng_->sync(*f);
      eng_->sync_dir(tmp.path);  // every name in it, before it can appear as dst
    } catch (...) {
      remove_creation_dir(*eng_, tmp.path);
      throw;
    }
    try {
      eng_->rename(tmp.path, dst);  // the snapshot point
    } catch (const error& e) {
      remove_creation_dir(*eng_, tmp.path);
      const int en = e.sys_errno();
      if (en == ENOTEMPTY || en == EEXIST || en == ENOTDIR || en == EISDIR) {
        throw error(errc::already_exists, dst, "snapshot",
                    "destination was created by someone else meanwhile (" +
                        std::string(e.what()) + ")");
      }
      throw;
    }
    try {
      eng_->sync_dir(parent);  // the name dst
    } catch (...) {
      // Its name may not be durable: take it back out rather than report a snapshot a crash
      // could still undo.
      undo_creation(*eng_, dst, parent, name, false);
      throw;
    }
  }

  void rebuild_checksums() override {
    std::lock_guard cl(commit_mu_);
    check_usable("rebuild_checksums");
    check_writable("rebuild_checksums");
    wait_checkpoint("rebuild_checksums");
    try {
      segs_.rebuild_tables();
    } catch (const error& e) {
      poison("rebuilding the segment checksums failed: " + std::string(e.what()));
      throw;
    }
  }

  // --- accessors ---------------------------------------------------------------------------

  std::uint64_t epoch() const override {
    std::shared_lock lk(mu_);
    return sb_.epoch;
  }
  std::vector<std::byte> root() const override {
    std::shared_lock lk(mu_);
    return sb_.root;
  }
  const std::string& path() const override { return dir_; }
  const uuid& id() const override { return sb_.id; }  // never changes after open
  std::uint32_t page_size() const override { return sb_.page_size; }
  std::uint64_t capacity() const override { return sb_.capacity; }
  std::uint64_t segment_size() const override { return sb_.segment_size; }
  bool read_only() const override { return read_only_; }
  io::engine& engine() const override { return *eng_; }

  store_stats stats() const override {
    store_stats s;
    s.pages_read = stat_pages_read_;
    s.zero_pages_read = stat_zero_pages_;
    s.pages_written = stat_pages_written_;
    s.commits = stat_commits_;
    s.journal_bytes = stat_journal_bytes_;
    s.checkpointed_pages = stat_ckpt_pages_;
    s.commit_ns = stat_commit_ns_;
    return s;
  }

  std::uint64_t disk_bytes() const override {
    std::vector<std::shared_ptr<io::file>> files = segs_.files();
    {
      std::shared_lock lk(mu_);
      for (const auto* j : {&cur_, &sealed_, &prev_}) {
        if (*j && (*j)->file) files.push_back((*j)->file);
      }
    }
    std::uint64_t total = eng_->allocated_bytes(*super_);
    for (const auto& f : files) {
      if (f) total += eng_->allocated_bytes(*f);
    }
    return total;
  }

 private:
  std::shared_ptr<journal_state> new_journal(std::uint64_t epoch) const {
    return std::make_shared<journal_state>(epoch, join(dir_, journal_name(epoch)));
  }

  // Under mu_ (exclusive). Creates the journal file on the first record of the epoch. A
  // failure poisons: the caller cannot tell whether a half-created file is left behind.
  void ensure_journal_file(journal_state& j) {
    if (j.file) return;
    try {
      j.file = eng_->open(j.path, io::open_mode::create_new);
    } catch (const error& e) {
      poison("cannot create " + j.path + ": " + e.what());
      throw;
    }
    j.created = true;
  }

  // Under mu_ (exclusive), or during recovery. Zeroes [first, first+count) in the view: only
  // pages that may hold data need an entry (bounded by the pages with data, however large the
  // range); their bits are cleared.
  // `undo` (optional) receives every changed page with its previous entry (zero_bit alone:
  // none) and slot, so a discard whose record could not be written can be taken back.
  struct discard_undo {
    std::uint64_t page;
    std::uint64_t entry;  // previous entry in j.index, or `none`
    std::optional<slot_ref> slot;
    static constexpr std::uint64_t none = ~0ull;
  };
  void discard_in_index(journal_state& j, std::uint64_t rec_off, std::uint64_t first,
                        std::uint64_t count, std::vector<discard_undo>* undo = nullptr) {
    bits_.for_each_set(first, first + count, [&](std::uint64_t p) {
      if (undo != nullptr) {
        const std::uint64_t* e = j.index.find(p);
        auto s = j.slots.find(p);
        undo->push_back({p, e ? *e : discard_undo::none,
                         s != j.slots.end() ? std::optional<slot_ref>(s->second) : std::nullopt});
      }
      bits_.clear(p);
      j.index.put(p, rec_off | journal_index::zero_bit);
      j.slots.erase(p);  // a later write must append: it has to land after this record
    });
  }

  // Under mu_ (exclusive). Takes back a discard whose record was never written: pages still
  // showing its zero marker get their previous entry (and slot) back; bits are set again
  // (a set bit never lies about data).
  void undo_discard(journal_state& j, std::uint64_t rec_off, const std::vector<discard_undo>& undo) {
    const std::uint64_t marker = rec_off | journal_index::zero_bit;
    for (const auto& u : undo) {
      bits_.set(u.page);
      const std::uint64_t* e = j.index.find(u.page);
      if (e == nullptr || *e != marker) continue;  // superseded by a later record
      if (u.entry == discard_undo::none) {
        j.index.erase(u.page);
      } else {
        j.index.set(u.page, u.entry);
      }
      if (u.slot) j.slots.insert_or_assign(u.page, *u.slot);
    }
  }

  // Publishes a written record (`pages` null: nothing to publish) and drops the in-flight
  // count the seal in commit() waits on.
  // A published image that is still the page's newest entry becomes its rewritable slot
  // (a discard reserved after the record keeps the page zero).
  void finish_record(journal_state& j, const std::vector<std::uint64_t>* pages,
                     record_info* rec, std::uint64_t image_off) {
    {
      std::unique_lock lk(mu_);
      if (pages != nullptr) {
        for (std::size_t i = 0; i < pages->size(); ++i) {
          const std::uint64_t at = image_off + i * sb_.page_size;
          j.index.put((*pages)[i], at);
          if (rec != nullptr && *j.index.find((*pages)[i]) == at) {
            j.slots.insert_or_assign((*pages)[i], slot_ref{rec, static_cast<std::uint32_t>(i)});
          }
        }
      }
      --j.inflight;
    }
    idle_.notify_all();
  }

  // Runs in ckpt_. Copies the sealed journal into the segments; on success reads stop
  // consulting the sealed index. Any failure poisons: the segments are then unknown, so no
  // later superblock may claim them (the durable epoch stays recoverable from its journal).
  void run_checkpoint(std::shared_ptr<journal_state> j) noexcept {
    try {
      stat_ckpt_pages_ += segs_.checkpoint(*j->file, j->index.sorted(), j->epoch);
      std::unique_lock lk(mu_);
      if (sealed_ == j) sealed_.reset();
    } catch (const std::exception& e) {
      poison("checkpoint of epoch " + std::to_string(j->epoch) + " failed: " + e.what());
    }
  }

  // Under commit_mu_.
  void wait_checkpoint(const char* op) {
    if (ckpt_.joinable()) ckpt_.join();
    check_usable(op);
  }

  void poison(const std::string& cause) {
    std::lock_guard lk(poison_mu_);
    if (!poisoned_.load()) {
      poison_cause_ = cause;
      poisoned_.store(true);
    }
  }

  std::string poison_cause() const {
    std::lock_guard lk(poison_mu_);
    return poison_cause_;
  }

  void check_usable(const char* op) const {
    if (!poisoned_.load(std::memory_order_acquire)) return;
    std::lock_guard lk(poison_mu_);
    throw error(errc::poisoned, dir_, op,
                "an earlier failure ended the epoch (" + poison_cause_ +
                    "); the last committed epoch is intact on disk: reopen to continue");
  }

  void check_writable(const char* op) const {
    if (read_only_) throw error(errc::read_only, dir_, op, "datastore is open read-only");
  }

  void check_page(std::uint64_t page, const void* buf, const char* op) const {
    if (page >= page_count_) {
      throw error(errc::invalid_argument, dir_, op,
                  "page " + std::to_string(page) + " beyond capacity (" +
                      std::to_string(page_count_) + " pages)");
    }
    if (buf == nullptr) throw error(errc::invalid_argument, dir_, op, "null page buffer");
  }

  const std::shared_ptr<io::engine> eng_;
  const std::string dir_;
  const bool read_only_;
  const std::unique_ptr<io::file> lock_;   // pheap.super, holds the flock for our lifetime
  const std::unique_ptr<io::file> super_;  // pheap.super, for reading and writing slots

  mutable std::shared_mutex mu_;
  std::condition_variable_any idle_;  // signalled when a record's inflight count drops
  superblock sb_;
  const std::uint64_t page_count_;
  page_bitmap bits_;
  segment_set segs_;
  std::shared_ptr<journal_state> cur_;
  std::shared_ptr<journal_state> sealed_;
  std::shared_ptr<journal_state> prev_;
  const std::uint32_t zero_crc_;  // of a page of zeros (page_crc)

  std::mutex commit_mu_;
  std::thread ckpt_;

  std::atomic<bool> poisoned_{false};
  mutable std::mutex poison_mu_;
  std::string poison_cause_;

  std::atomic<std::uint64_t> stat_pages_read_{0}, stat_zero_pages_{0}, stat_pages_written_{0},
      stat_commits_{0}, stat_journal_bytes_{0}, stat_ckpt_pages_{0}, stat_commit_ns_{0};
};

std::shared_ptr<io::engine> pick_engine(const store_options& opt) {
  return opt.engine ? opt.engine : io::default_engine();
}

}  // namespace
}  // namespace store

std::unique_ptr<sparse_store> sparse_store::create(const std::string& dir,
                                                   const store_options& opt) {
  using namespace store;
  validate_geometry(dir, opt.page_size, opt.segment_size, opt.capacity);
  if (opt.read_only) {
    throw error(errc::invalid_argument, dir, "create", "cannot create a read-only datastore");
  }
  auto eng = pick_engine(opt);
  const std::string name = base_name(dir);
  if (name.empty() || name == "." || name == "..") {
    throw error(errc::invalid_argument, dir, "create",
                "the datastore path must end in a directory name (not '.', '..' or '/')");
  }
  const std::string parent = parent_of(dir);
  const bool replaces_empty_dir = check_create_target(*eng, dir);

  // Build the whole datastore under a temporary name in the same parent, make it durable,
  // then rename it into place: a crash at any point leaves `dir` absent (or the empty
  // directory it was) or holding a complete epoch-0 datastore. See FORMAT.md "Creation".
  remove_stale_creations(*eng, parent, name);
  creation_dir tmp;
  try {
    tmp = make_creation_dir(*eng, parent, name);
  } catch (const error& e) {
    if (e.code() != errc::not_found) throw;
    throw error(errc::not_found, dir, "create",
                "parent directory " + parent + " does not exist", e.sys_errno());
  }
  const std::string tmp_super = join(tmp.path, super_name);

  superblock sb;
  sb.page_size = opt.page_size;
  sb.id = new_uuid();
  sb.journal_id = sb.id;
  sb.epoch = 0;
  sb.segment_size = opt.segment_size;
  sb.capacity = opt.capacity;
  sb.segments.assign(sb.segment_count(), false);

  std::unique_ptr<io::file> lock;
  try {
    auto super = eng->open(tmp_super, io::open_mode::create_new);
    // The flock follows the inode through the rename: nobody can open the datastore between
    // the rename and our return without finding it locked.
    lock = eng->open(tmp_super, io::open_mode::read_only);
    lock_super(*lock, dir, false);
    // Slot 0 holds epoch 0, slot 1 zeros (invalid until epoch 1 is committed into it).
    std::vector<std::byte> both(super_file_size);
    const auto slot = encode_slot(sb);
    std::memcpy(both.data(), slot.data(), slot_size);
    eng->write_at(*super, 0, both.data(), both.size());
    eng->sync(*super);         // the epoch-0 commit record
    eng->sync_dir(tmp.path);   // pheap.super's name, before the directory can appear
  } catch (...) {
    remove_creation_dir(*eng, tmp.path);
    throw;
  }
  try {
    eng->rename(tmp.path, dir);  // the creation point
  } catch (const error& e) {
    remove_creation_dir(*eng, tmp.path);
    const int en = e.sys_errno();
    if (en == ENOTEMPTY || en == EEXIST || en == ENOTDIR || en == EISDIR) {
      throw error(errc::already_exists, dir, "create",
                  "path was created by someone else while the datastore was being built (" +
                      std::string(e.what()) + ")");
    }
    if (en == EBUSY) {
      throw error(errc::invalid_argument, dir, "create",
                  "cannot replace a mount point or busy directory; create the datastore in a "
                  "subdirectory of it");
    }
    throw;
  }
  std::unique_ptr<io::file> super;
  try {
    eng->sync_dir(parent);  // the name `dir`
    super = eng->open(join(dir, super_name), io::open_mode::read_write);
  } catch (...) {
    // The name may not be durable: take the datastore back out rather than hand out a store
    // whose existence a crash could undo (best effort; what is left is either nothing, the
    // empty directory the caller gave us, or a complete epoch-0 datastore).
    undo_creation(*eng, dir, parent, name, replaces_empty_dir);
    throw;
  }
  return std::make_unique<store_impl>(eng, dir, false, std::move(lock), std::move(super),
                                      std::move(sb));
}

std::unique_ptr<sparse_store> sparse_store::open(const std::string& dir,
                                                 const store_options& opt) {
  using namespace store;
  auto eng = pick_engine(opt);
  if (!eng->exists(dir)) {
    throw error(errc::not_found, dir, "open", "datastore directory does not exist");
  }
  const std::string super_path = join(dir, super_name);
  if (!eng->exists(super_path)) {
    throw error(errc::not_a_datastore, dir, "open",
                "no " + std::string(super_name) + ": not a pheap datastore");
  }
  // Lock first, then read: the superblock cannot change under a shared or exclusive lock.
  auto lock = eng->open(super_path, io::open_mode::read_only);
  lock_super(*lock, dir, opt.read_only);
  auto super =
      eng->open(super_path, opt.read_only ? io::open_mode::read_only : io::open_mode::read_write);
  superblock sb = read_superblock(*eng, *super, super_path);
  auto s = std::make_unique<store_impl>(eng, dir, opt.read_only, std::move(lock),
                                        std::move(super), std::move(sb));
  s->recover();
  return s;
}

}  // namespace pheap
