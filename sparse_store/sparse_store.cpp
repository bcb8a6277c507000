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
// without any lock, then publish index entries under mu_ and drop inflight. commit() swaps cur_
// for a fresh journal under mu_ (the seal) and waits until the sealed journal has no record in
// flight: a write_pages() racing with commit() lands wholly in the sealed epoch (it reserved
// before the seal) or wholly in the next (after), never torn.
//
// commit_mu_ serialises commit() and snapshot() and owns ckpt_ (the checkpoint thread).
#include <sys/file.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <thread>

#include "common/crc32c.hpp"
#include "pheap/error.hpp"
#include "pheap/sparse_store.hpp"
#include "sparse_store/journal.hpp"
#include "sparse_store/layout.hpp"
#include "sparse_store/page_bitmap.hpp"
#include "sparse_store/segment_set.hpp"
#include "sparse_store/superblock.hpp"

namespace pheap {

namespace store {
namespace {

using clock = std::chrono::steady_clock;

// One journal file and its index. The file is created lazily by the first record.
struct journal_state {
  journal_state(std::uint64_t e, std::string p) : epoch(e), path(std::move(p)) {}
  std::uint64_t epoch;
  std::string path;
  std::shared_ptr<io::file> file;  // null until the first record (nothing to commit)
  bool created = false;            // created by us: its directory entry needs a sync_dir
  std::uint64_t length = 0;        // bytes reserved; all written once inflight == 0
  unsigned inflight = 0;           // records reserved but not yet written and published
  journal_index index;
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
        segs_(*eng_, dir_, sb_.page_size, sb_.segment_size, sb_.segment_count(), read_only),
        cur_(new_journal(sb_.epoch + 1)) {}

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
      scan_journal(*eng_, *j->file, j->path, e, sb_.journal_length, sb_.page_size, page_count_,
                   v);
      if (read_only_) {
        sealed_ = j;  // served from memory; nothing on disk changes
      } else {
        // Replay is idempotent: the segments may already hold some or all of it.
        stat_ckpt_pages_ += segs_.checkpoint(*j->file, j->index.sorted());
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

  void read_pages(std::span<const page_read> batch) override {
    check_usable("read_pages");
    for (const auto& r : batch) check_page(r.page, r.buf, "read_pages");
    const std::uint32_t ps = sb_.page_size;
    std::vector<io::read_request> reqs;
    std::vector<std::shared_ptr<io::file>> hold;  // keeps files open across the unlocked read
    std::uint64_t zeros = 0;
    {
      std::shared_lock lk(mu_);
      for (const auto& r : batch) {
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
          reqs.push_back({j->file.get(), journal_index::offset(*entry), r.buf, ps});
          hold.push_back(j->file);
        } else if (auto f = segs_.get(r.page / segs_.pages_per_segment())) {
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
    stat_pages_read_ += reqs.size();
    stat_zero_pages_ += zeros;
  }

  void write_pages(std::span<const page_write> batch) override {
    check_usable("write_pages");
    check_writable("write_pages");
    if (batch.empty()) return;
    for (const auto& w : batch) check_page(w.page, w.buf, "write_pages");
    const std::uint32_t ps = sb_.page_size;
    const std::size_t n = batch.size();

    // Checksums and the header are built outside the lock; only the epoch is filled in later.
    std::vector<std::uint64_t> pages(n);
    std::vector<std::uint32_t> crcs(n);
    for (std::size_t i = 0; i < n; ++i) {
      pages[i] = batch[i].page;
      crcs[i] = detail::crc32c(batch[i].buf, ps);
    }
    const std::size_t hsize = pages_header_size(n);
    std::vector<std::byte> header(hsize);

    std::shared_ptr<journal_state> j;
    std::uint64_t off;
    {
      std::unique_lock lk(mu_);
      j = cur_;
      ensure_journal_file(*j);
      off = j->length;
      j->length += hsize + static_cast<std::uint64_t>(n) * ps;
      ++j->inflight;
      // Set at reservation, so a discard reserved after us sees the page and supersedes us.
      for (std::uint64_t p : pages) bits_.set(p);
    }
    encode_pages_header(header.data(), j->epoch, n, pages.data(), crcs.data());
    std::vector<io::write_request> reqs;
    reqs.reserve(n + 1);
    reqs.push_back({j->file.get(), off, header.data(), hsize});
    for (std::size_t i = 0; i < n; ++i) {
      reqs.push_back({j->file.get(), off + hsize + i * ps, batch[i].buf, ps});
    }
    try {
      eng_->write(reqs);  // one engine call per batch
    } catch (const error& e) {
      // The journal now has a hole where this record should be: the epoch cannot commit.
      poison("journal append failed: " + std::string(e.what()));
      finish_record(*j, nullptr, 0);
      throw;
    }
    finish_record(*j, &pages, off + hsize);
    stat_pages_written_ += n;
    stat_journal_bytes_ += hsize + static_cast<std::uint64_t>(n) * ps;
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
    std::shared_ptr<journal_state> j;
    std::uint64_t off;
    {
      std::unique_lock lk(mu_);
      j = cur_;
      ensure_journal_file(*j);
      off = j->length;
      j->length += discard_header_size;
      ++j->inflight;
      discard_in_index(*j, off, first_page, count);  // visible to reads from now on
    }
    encode_discard_header(header, j->epoch, first_page, count);
    try {
      eng_->write_at(*j->file, off, header, sizeof header);
    } catch (const error& e) {
      poison("journal append failed: " + std::string(e.what()));
      finish_record(*j, nullptr, 0);
      throw;
    }
    finish_record(*j, nullptr, 0);
    stat_journal_bytes_ += discard_header_size;
  }

  bool may_have_data(std::uint64_t page) const override {
    return page < page_count_ && bits_.test(page);
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
    }
    check_usable("commit");  // a sealed record whose write failed poisoned the store

    superblock next = sb_;  // sb_ changes only here, under commit_mu_
    next.epoch = j->epoch;
    next.journal_length = j->file ? j->length : 0;
    next.root.assign(root.begin(), root.end());
    next.segments = segs_.present();
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
      std::unique_lock lk(mu_);
      sb_ = next;
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

  void snapshot(const std::string& dst) override {
    std::lock_guard cl(commit_mu_);  // no commit, hence no checkpoint, until we are done
    check_usable("snapshot");
    wait_checkpoint("snapshot");
    // Now (read-write) the segments hold exactly epoch sb_.epoch; writers keep appending to
    // cur_, which the snapshot ignores. Read-only: segments + the committed journal do.
    const superblock src = sb_;
    if (eng_->exists(dst)) {
      throw error(errc::already_exists, dst, "snapshot", "destination already exists");
    }
    eng_->create_dir(dst);
    try {
      superblock out = src;
      out.id = new_uuid();
      out.segments = segs_.present();
      for (std::uint64_t i = 0; i < out.segments.size(); ++i) {
        if (out.segments[i]) eng_->clone_file(segs_.path_of(i), join(dst, segment_name(i)));
      }
      if (read_only_ && src.journal_length > 0) {
        eng_->clone_file(join(dir_, journal_name(src.epoch)), join(dst, journal_name(src.epoch)));
      } else {
        out.journal_length = 0;  // segments already hold the whole epoch
      }
      auto f = eng_->open(join(dst, super_name), io::open_mode::create_new);
      std::vector<std::byte> both(super_file_size);
      const auto slot = encode_slot(out);
      std::memcpy(both.data() + (out.epoch % slot_count) * slot_size, slot.data(), slot_size);
      eng_->write_at(*f, 0, both.data(), both.size());
      eng_->sync(*f);
      eng_->sync_dir(dst);
      eng_->sync_dir(parent_of(dst));
    } catch (...) {
      remove_partial(dst);
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
  void discard_in_index(journal_state& j, std::uint64_t rec_off, std::uint64_t first,
                        std::uint64_t count) {
    bits_.for_each_set(first, first + count, [&](std::uint64_t p) {
      bits_.clear(p);
      j.index.put(p, rec_off | journal_index::zero_bit);
    });
  }

  // Publishes a written record (`pages` null: nothing to publish) and drops the in-flight
  // count the seal in commit() waits on.
  void finish_record(journal_state& j, const std::vector<std::uint64_t>* pages,
                     std::uint64_t image_off) {
    {
      std::unique_lock lk(mu_);
      if (pages != nullptr) {
        for (std::size_t i = 0; i < pages->size(); ++i) {
          j.index.put((*pages)[i], image_off + i * sb_.page_size);
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
      stat_ckpt_pages_ += segs_.checkpoint(*j->file, j->index.sorted());
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

  void remove_partial(const std::string& dst) noexcept {
    try {
      for (const auto& n : eng_->list_dir(dst)) eng_->remove_file(join(dst, n));
      eng_->remove_dir(dst);
    } catch (const error&) {
    }
  }

  void poison(const std::string& cause) {
    std::lock_guard lk(poison_mu_);
    if (!poisoned_.load()) {
      poison_cause_ = cause;
      poisoned_.store(true);
    }
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
  if (eng->exists(dir)) {
    if (!eng->list_dir(dir).empty()) {
      throw error(errc::already_exists, dir, "create", "directory exists and is not empty");
    }
  } else {
    eng->create_dir(dir);
  }
  const std::string super_path = join(dir, super_name);
  auto super = eng->open(super_path, io::open_mode::create_new);
  auto lock = eng->open(super_path, io::open_mode::read_only);
  lock_super(*lock, dir, false);

  superblock sb;
  sb.page_size = opt.page_size;
  sb.id = new_uuid();
  sb.epoch = 0;
  sb.segment_size = opt.segment_size;
  sb.capacity = opt.capacity;
  sb.segments.assign(sb.segment_count(), false);
  // Slot 0 holds epoch 0, slot 1 zeros (invalid until epoch 1 is committed into it).
  std::vector<std::byte> both(super_file_size);
  const auto slot = encode_slot(sb);
  std::memcpy(both.data(), slot.data(), slot_size);
  eng->write_at(*super, 0, both.data(), both.size());
  eng->sync(*super);                // the epoch-0 commit record
  eng->sync_dir(dir);               // pheap.super's name
  eng->sync_dir(parent_of(dir));    // the directory's own name
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
