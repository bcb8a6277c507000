// sparse_store/commit.cpp — commit (E → E+1), and the two-phase variant prepare/confirm
// (FORMAT.md "Commit", "Two-phase commit"). The protocol, each step's reason in FORMAT.md:
//
//   1. seal_epoch        the working map of E+1 is sealed: later writes belong to E+2; the seal
//                        waits for the batches of E+1 in flight. The changed map blocks are
//                        encoded (each for the home its committed copy does not use) and the
//                        new directory (for the directory home the current one does not use).
//   2. write_map         the changed map blocks and the directory, into those unused homes
//                        (after keeping a copy of any a registered reader's older epoch names:
//                        pins.cpp).
//   3. sync_epoch_files  fdatasync every segment E+1 wrote and pheap.map, together
//                        (engine::sync_files); fsync DIR if E+1 created a segment.
//   4. write_superblock  the record of E+1 into the slot not holding E, then fdatasync: the
//                        commit point. Before it, a crash yields E; after it, E+1.
//   5. raise the floor   readers may register at E+1 and above only (pins.cpp: from here on
//                        the writer may overwrite what only E names, after keeping a copy of
//                        what a registered reader of E or older still names).
//   6. punch_freed       both homes of every page E+1 discarded are punched out (E, which
//                        still named them, is no longer the watermark).
//   7. publish           E+1 becomes the committed epoch, then its versions the committed ones
//                        and the barriers drop (in that order: a write the barrier released
//                        sees E+1 committed); dead readers' slots and pins nobody needs go.
//
// No journal, no checkpoint, no replay: bytes written ≈ pages written + changed map blocks +
// the directory + one superblock slot. A failure in steps 1-4 poisons the store (E stays
// durable; if the superblock's own sync failed, E+1 may be durable too). A failure to punch
// (step 5) comes after the commit point: the commit returns, the store is poisoned (the space
// is not reclaimed; reopening retries nothing, FORMAT.md "Limits").
//
// prepare() runs steps 1-4 with the record marked prepared and keeps the epoch sealed (its
// barriers hold); confirm() writes the same record unmarked into the other slot (replacing
// E) and runs steps 5-7.
#include <algorithm>
#include <chrono>

#include "pheap/error.hpp"
#include "commit_state.hpp"
#include "layout.hpp"

namespace pheap::store {

namespace {

using clock = std::chrono::steady_clock;

}  // namespace

void store_impl::check_commit(std::span<const std::byte> root, const char* op) const {
  check_usable(op);
  check_writable(op);
  if (root.size() > max_root_size) {
    throw error(errc::invalid_argument, dir_, op,
                "root blob of " + std::to_string(root.size()) + " bytes exceeds " +
                    std::to_string(max_root_size));
  }
  if (pending_) {
    throw error(errc::invalid_argument, dir_, op,
                "epoch " + std::to_string(pending_->record.epoch) +
                    " is prepared: confirm() it first (or close and let the next open decide)");
  }
}

std::uint64_t store_impl::commit(std::span<const std::byte> root) {
  const auto t0 = clock::now();
  std::lock_guard cl(commit_mu_);
  check_commit(root, "commit");
  const std::uint64_t e = commit_locked(root, false);
  stat_commit_ns_ += static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - t0).count());
  return e;
}

std::uint64_t store_impl::commit_if_changed(std::span<const std::byte> root) {
  {
    std::lock_guard cl(commit_mu_);
    check_commit(root, "commit");
    const std::vector<std::byte> last = this->root();
    if (changes_.load(std::memory_order_relaxed) == 0 &&
        std::equal(root.begin(), root.end(), last.begin(), last.end())) {
      return epoch();
    }
  }
  return commit(root);
}

std::uint64_t store_impl::prepare(std::span<const std::byte> root) {
  std::lock_guard cl(commit_mu_);
  check_commit(root, "prepare");
  return commit_locked(root, true);
}

std::uint64_t store_impl::commit_locked(std::span<const std::byte> root, bool prepare) {
  changes_.store(0, std::memory_order_relaxed);  // later writes belong to the next epoch
  commit_state c = seal_epoch();                                  // 1
  const unsigned slot = 1 - sb_slot_;
  superblock next = next_record(c, root, prepare);
  try {
    if (table_) protect_map(c);
    write_map(c);                                                 // 2
    sync_epoch_files(c);                                          // 3
    write_superblock(next, slot);                                 // 4: the commit point
  } catch (const error& e) {
    poison("commit of epoch " + std::to_string(next.epoch) + " failed: " + e.what());
    throw;
  }
  if (prepare) {
    pending_ = std::make_unique<pending_epoch>(pending_epoch{std::move(c), next, slot});
    prepared_.store(true, std::memory_order_release);
    return next.epoch;
  }
  if (table_) table_->raise_floor(next.epoch);                    // 5
  punch_freed(c, next.epoch);                                     // 6
  publish(c, std::move(next), slot);                              // 7
  ++stat_commits_;
  return epoch();
}

std::uint64_t store_impl::confirm() {
  std::lock_guard cl(commit_mu_);
  check_usable("confirm");
  if (!pending_) throw error(errc::invalid_argument, dir_, "confirm", "no epoch is prepared");
  superblock next = pending_->record;
  next.prepared = false;
  const unsigned slot = sb_slot_;  // the previous watermark's slot; the prepared copy stays
  try {
    write_superblock(next, slot);
  } catch (const error& e) {
    poison("confirming epoch " + std::to_string(next.epoch) + " failed: " + e.what());
    throw;
  }
  commit_state c = std::move(pending_->state);
  pending_.reset();
  prepared_.store(false, std::memory_order_release);
  if (table_) table_->raise_floor(next.epoch);
  punch_freed(c, next.epoch);
  publish(c, std::move(next), slot);
  ++stat_commits_;
  return epoch();
}

// An accepted prepared epoch found at open becomes the watermark: the same record unmarked
// into the other slot. Its freed homes stay (nothing says which they were); see FORMAT.md.
void store_impl::confirm_at_open() {
  if (!sb_.prepared) return;
  superblock next = sb_;
  next.prepared = false;
  const unsigned slot = 1 - sb_slot_;
  write_superblock(next, slot);
  sb_ = std::move(next);
  sb_slot_ = slot;
}

store_impl::commit_state store_impl::seal_epoch() {
  commit_state c;
  c.sealed = map_->seal();
  {
    std::lock_guard lk(written_mu_);
    if (auto it = written_.find(c.sealed.epoch); it != written_.end()) {
      c.files = std::move(it->second);
      written_.erase(it);
    }
  }
  if (!c.sealed.blocks.empty()) {
    std::shared_lock lk(sb_mu_);
    c.update = map_->encode(c.sealed, sb_.directory_home);
  }
  return c;
}

superblock store_impl::next_record(const commit_state& c, std::span<const std::byte> root,
                                   bool prepared) const {
  std::shared_lock lk(sb_mu_);
  superblock next = sb_;
  next.epoch = c.sealed.epoch;
  next.base_epoch = sb_.epoch;
  next.prepared = prepared;
  next.root.assign(root.begin(), root.end());
  if (!c.sealed.blocks.empty()) {
    next.directory_home = c.update.directory_home;
    next.directory_crc = c.update.directory_crc;
    next.directory_length = c.update.directory_length;
  }
  return next;
}

void store_impl::write_map(const commit_state& c) {
  if (c.sealed.blocks.empty()) return;  // the directory of E stays the current one
  const page_map::map_update& u = c.update;
  std::vector<io::write_request> reqs;
  for (std::size_t k = 0; k < u.offsets.size(); ++k) {
    reqs.push_back({&map_->file(), u.offsets[k], u.blocks.data() + k * map_block_size,
                    map_block_size});
  }
  reqs.push_back({&map_->file(), map_->layout().directory_offset(u.directory_home),
                  u.directory_bytes.data(), u.directory_bytes.size()});
  eng_->write(reqs);
  stat_map_bytes_ += u.blocks.size() + u.directory_bytes.size();
}

void store_impl::sync_epoch_files(const commit_state& c) {
  const std::vector<std::uint64_t> segs(c.files.segments.begin(), c.files.segments.end());
  const bool map_written = !c.sealed.blocks.empty();
  if (segs.empty() && map_written) eng_->sync(map_->file());
  segs_.gather(
      segs.size(),
      [&](std::size_t i, bool patient) {
        bool created = false;
        return segs_.for_write(segs[i], created, patient);
      },
      [&](std::size_t first, std::size_t end, const std::vector<std::shared_ptr<io::file>>& files) {
        std::vector<io::file*> batch;
        for (std::size_t i = first; i < end; ++i) batch.push_back(files[i].get());
        if (end == segs.size() && map_written) batch.push_back(&map_->file());
        eng_->sync_files(batch);
      });
  if (c.files.created) eng_->sync_dir(dir_);  // the new segments' names
}

void store_impl::write_superblock(const superblock& next, unsigned slot) {
  write_slot(*eng_, *super_, slot, next);
  eng_->sync(*super_);
}

void store_impl::punch_freed(const commit_state& c, std::uint64_t committed) {
  const std::vector<std::uint64_t> pages = map_->freed(c.sealed);
  try {
    if (table_) protect_punch(pages, committed);
    for (std::size_t i = 0; i < pages.size();) {
      // A run of consecutive pages within one segment: one hole per home.
      const std::uint64_t seg = segs_.segment_of(pages[i]);
      std::size_t j = i + 1;
      while (j < pages.size() && pages[j] == pages[j - 1] + 1 && segs_.segment_of(pages[j]) == seg) ++j;
      if (auto f = segs_.if_exists(seg)) {
        const std::uint64_t len = (j - i) * page_size_;
        eng_->punch_hole(*f, segs_.offset_of(pages[i], page_home::first), len);
        eng_->punch_hole(*f, segs_.offset_of(pages[i], page_home::second), len);
      }
      i = j;
    }
  } catch (const error& e) {
    poison("punching the homes freed by epoch " + std::to_string(c.sealed.epoch) +
           " failed (the epoch is durable): " + e.what());
    return;
  }
  stat_freed_pages_ += pages.size();
}

void store_impl::publish(const commit_state& c, superblock next, unsigned slot) {
  {
    std::unique_lock lk(sb_mu_);
    sb_ = std::move(next);
    sb_slot_ = slot;
  }
  map_->publish(c.sealed, c.update.directory);
  if (table_) reap_readers();
}

}  // namespace pheap::store
