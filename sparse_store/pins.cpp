// sparse_store/pins.cpp — readers beside a writer (FORMAT.md "Readers beside a writer"): the
// writer preserves what a registered reader's epoch still names before overwriting it, and a
// reader reads what the writer moved. The table they share is reader_table.hpp.
//
// The writer, before it overwrites a home (a page's in write_homes, a map block's or the
// directory's in write_map, both of a freed page's in punch_freed), runs preserve():
//   1. readers   the active reader epochs, less the committed and the sealed epoch (the
//                homes the writer targets are never theirs: page_map.hpp);
//   2. views     for each such epoch R its view — R's directory and the map blocks it needs,
//                read like a reader reads them (below) — says whether R names that home;
//   3. pin       for each home some R names and no pin of R covers yet: a run of grains of
//                pheap.pinned (over the limit: the oldest reader epoch is expired first), the
//                home's bytes copied there, then the pin linked into the table for the epochs
//                [lo, hi] that name it. Only then is the home overwritten.
// A reader reads a copy at its home, then looks for a pin covering its epoch: if there is one,
// it reads the pinned copy instead; then it checks that its slot was not expired. The pin is
// linked before the overwrite starts and the expiry is stored before an unpinned overwrite
// starts, so a reader that finds neither after its read has read the bytes its map names
// (every copy is still verified against the map's CRC). Nothing here is synced: readers are
// processes of this boot, and a power cut ends them too.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>

#include "pheap/crc32c.hpp"
#include "pheap/error.hpp"
#include "commit_state.hpp"
#include "layout.hpp"

namespace pheap::store {

namespace {

struct aligned_buffer {
  std::byte* p = nullptr;
  explicit aligned_buffer(std::size_t n) {
    if (::posix_memalign(reinterpret_cast<void**>(&p), 4096, std::max<std::size_t>(n, 4096)) != 0) throw std::bad_alloc();
  }
  ~aligned_buffer() { std::free(p); }
  aligned_buffer(const aligned_buffer&) = delete;
  aligned_buffer& operator=(const aligned_buffer&) = delete;
};

// Adds the time of its scope to a counter (store_stats::reader_protect_ns).
class timed {
 public:
  explicit timed(std::atomic<std::uint64_t>& total) : total_(total), t0_(std::chrono::steady_clock::now()) {}
  ~timed() {
    total_ += static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_).count());
  }
  timed(const timed&) = delete;
  timed& operator=(const timed&) = delete;

 private:
  std::atomic<std::uint64_t>& total_;
  std::chrono::steady_clock::time_point t0_;
};

const char* why_expired(reader_table::expiry e) {
  return e == reader_table::expiry::limit
             ? "the copies the writer had to keep for it exceeded the pin limit"
             : "the writer could not keep a copy for it";
}

}  // namespace

// --- reads ---------------------------------------------------------------------------------------

io::file& store_impl::pinned_file() {
  std::lock_guard lk(pinned_mu_);
  if (!pinned_) {
    const std::string path = join(dir_, pinned_name);
    if (read_only_) {
      pinned_ = eng_->open(path, page_cache_reads_ ? io::open_mode::read_only
                                                   : io::open_mode::read_only | io::open_mode::direct);
    } else {
      pinned_ = eng_->open(path, io::open_mode::create | io::open_mode::direct);
    }
  }
  return *pinned_;
}

void store_impl::repair(pin_kind kind, std::uint64_t epoch, std::span<const std::uint64_t> ids,
                        std::span<void* const> bufs, std::size_t len, int slot) {
  if (!table_) return;
  std::vector<io::read_request> again;
  for (std::size_t k = 0; k < ids.size(); ++k) {
    if (auto run = table_->find(kind, ids[k], epoch)) {
      again.push_back({&pinned_file(), run->first * reader_table::grain, bufs[k], len});
    }
  }
  if (!again.empty()) {
    eng_->read(again);
    stat_pinned_reads_ += again.size();
  }
  if (slot >= 0) check_not_expired(slot, epoch);
}

void store_impl::check_not_expired(int slot, std::uint64_t epoch) const {
  const reader_table::expiry why = table_->expired(slot);
  if (why == reader_table::expiry::none) return;
  throw error(errc::stale, dir_, "read",
              "this reader's watermark (epoch " + std::to_string(epoch) +
                  ") was released by the writer: " + why_expired(why) + " (pin limit " +
                  std::to_string(table_->limit_bytes() >> 20) +
                  " MiB); refresh() or reopen to read the newest watermark");
}

// --- the writer's views of reader epochs ----------------------------------------------------------

std::shared_ptr<page_map> store_impl::view_of(const reader_epoch& r) {
  {
    std::lock_guard lk(views_mu_);
    if (auto it = views_.find(r.epoch); it != views_.end()) return it->second;
  }
  std::vector<dir_entry> directory = read_directory_of(r, -1);
  auto v = std::make_shared<page_map>(*eng_, map_->file_ptr(), id_, page_count_, std::move(directory), r.epoch);
  const std::uint64_t e = r.epoch;
  v->set_block_reader([this, e](std::span<const io::read_request> reads, std::span<const std::uint64_t> blocks) {
    eng_->read(reads);
    std::vector<void*> bufs;
    for (const auto& q : reads) bufs.push_back(q.buf);
    repair(pin_kind::block, e, blocks, bufs, map_block_size, -1);
  });
  std::lock_guard lk(views_mu_);
  return views_.emplace(r.epoch, std::move(v)).first->second;
}

std::vector<reader_epoch> store_impl::old_readers(std::uint64_t skip_a, std::uint64_t skip_b) const {
  std::vector<reader_epoch> out;
  if (!table_ || read_only_) return out;
  for (const reader_epoch& r : table_->active_epochs()) {
    if (r.epoch != skip_a && r.epoch != skip_b) out.push_back(r);
  }
  return out;
}

// A view that cannot be built (its directory or a block damaged, or an I/O error) leaves the
// writer unable to tell what its reader needs: that reader is expired, never waited for.
template <class Fn>
void store_impl::for_each_view(const std::vector<reader_epoch>& readers, Fn&& fn) {
  for (const reader_epoch& r : readers) {
    try {
      fn(r, *view_of(r));
    } catch (const error&) {
      table_->expire(r.epoch, reader_table::expiry::pin_failed);
    }
  }
}

// --- preserving --------------------------------------------------------------------------------

void store_impl::protect_pages(std::span<const page_map::planned_write> plan) {
  std::uint64_t sealed = ~std::uint64_t{0};
  if (auto s = map_->sealed_now()) sealed = *s;
  const std::vector<reader_epoch> readers = old_readers(epoch(), sealed);
  if (readers.empty()) return;
  const timed t(stat_protect_ns_);
  std::vector<std::uint64_t> pages;
  for (const auto& w : plan) {
    if (!w.in_place) pages.push_back(w.page);
  }
  if (pages.empty()) return;
  std::map<std::pair<std::uint64_t, page_home>, std::vector<std::uint64_t>> named;  // home → epochs
  for_each_view(readers, [&](const reader_epoch& r, page_map& v) {
    v.load_pages(pages);
    std::vector<page_map::copy> copies(pages.size());
    v.newest(pages, copies);
    std::size_t k = 0;
    for (const auto& w : plan) {
      if (w.in_place) continue;
      if (copies[k].home == w.target) named[{w.page, w.target}].push_back(r.epoch);
      ++k;
    }
  });
  std::vector<overwrite> list;
  for (auto& [at, epochs] : named) {
    const auto [page, home] = at;
    auto f = segs_.if_exists(segs_.segment_of(page));
    if (!f) continue;  // no file: the home holds nothing a reader could need
    list.push_back({pin_kind::page, page, std::move(f), segs_.offset_of(page, home), page_size_, std::move(epochs)});
  }
  preserve(list);
}

void store_impl::protect_map(const commit_state& c) {
  const std::vector<reader_epoch> readers = old_readers(epoch(), c.sealed.epoch);
  if (readers.empty() || c.sealed.blocks.empty()) return;
  const timed t(stat_protect_ns_);
  const page_map::map_update& u = c.update;
  std::vector<overwrite> list;
  std::vector<std::uint64_t> dir_epochs;
  for (const reader_epoch& r : readers) {
    if (r.dir_home == u.directory_home) dir_epochs.push_back(r.epoch);
  }
  if (!dir_epochs.empty()) {
    list.push_back({pin_kind::directory, 0, map_->file_ptr(), map_->layout().directory_offset(u.directory_home),
                    map_->layout().directory_slot, std::move(dir_epochs)});
  }
  std::map<std::uint64_t, std::vector<std::uint64_t>> blocks;  // block → epochs naming its target
  for_each_view(readers, [&](const reader_epoch& r, page_map& v) {
    const std::vector<dir_entry> d = v.committed_directory();
    for (std::size_t k = 0; k < c.sealed.blocks.size(); ++k) {
      const std::uint64_t b = c.sealed.blocks[k];
      if (map_->layout().block_offset(b, d[b].home()) == u.offsets[k] && (d[b].flags & dir_entry::exists)) {
        blocks[b].push_back(r.epoch);
      }
    }
  });
  for (std::size_t k = 0; k < c.sealed.blocks.size(); ++k) {
    auto it = blocks.find(c.sealed.blocks[k]);
    if (it == blocks.end()) continue;
    list.push_back({pin_kind::block, it->first, map_->file_ptr(), u.offsets[k], map_block_size, std::move(it->second)});
  }
  preserve(list);
}

void store_impl::protect_punch(std::span<const std::uint64_t> pages, std::uint64_t committed) {
  const std::vector<reader_epoch> readers = old_readers(committed, committed);
  if (readers.empty() || pages.empty()) return;
  const timed t(stat_protect_ns_);
  const std::vector<std::uint64_t> all(pages.begin(), pages.end());
  std::map<std::pair<std::uint64_t, page_home>, std::vector<std::uint64_t>> named;
  for_each_view(readers, [&](const reader_epoch& r, page_map& v) {
    v.load_pages(all);
    std::vector<page_map::copy> copies(all.size());
    v.newest(all, copies);
    for (std::size_t k = 0; k < all.size(); ++k) {
      if (copies[k].home != page_home::none) named[{all[k], copies[k].home}].push_back(r.epoch);
    }
  });
  std::vector<overwrite> list;
  for (auto& [at, epochs] : named) {
    auto f = segs_.if_exists(segs_.segment_of(at.first));
    if (!f) continue;
    list.push_back({pin_kind::page, at.first, std::move(f), segs_.offset_of(at.first, at.second), page_size_, std::move(epochs)});
  }
  preserve(list);
}

void store_impl::preserve(std::vector<overwrite>& list) {
  if (list.empty()) return;
  std::lock_guard lk(preserve_mu_);
  // Epochs a pin covers already (a writer killed after pinning and overwriting left it): the
  // home holds something else now, and the pin is what the reader reads.
  for (overwrite& o : list) {
    std::erase_if(o.epochs, [&](std::uint64_t e) { return table_->find(o.kind, o.id, e).has_value(); });
  }
  std::erase_if(list, [](const overwrite& o) { return o.epochs.empty(); });
  if (list.empty()) return;
  // Grains for every copy; over the limit the oldest reader epoch is expired (its readers
  // learn it at their next read) and its pins freed, until the copy fits or needs no pin.
  std::vector<pinned_run> runs(list.size());
  for (std::size_t k = 0; k < list.size(); ++k) {
    while (!list[k].epochs.empty()) {
      std::optional<pinned_run> r;
      try {
        r = table_->allocate(list[k].len);
      } catch (const error& e) {  // no room in the table's file: this copy cannot be kept
        for (std::uint64_t ep : list[k].epochs) table_->expire(ep, reader_table::expiry::pin_failed);
        list[k].epochs.clear();
        note_pin_failure(e.what());
        break;
      }
      if (r) {
        runs[k] = *r;
        break;
      }
      const std::vector<reader_epoch> live = table_->active_epochs();
      const std::uint64_t oldest = live.empty() ? list[k].epochs.front() : live.front().epoch;
      table_->expire(oldest, reader_table::expiry::limit);
      punch_pinned(table_->reap());
      for (std::size_t j = 0; j < list.size(); ++j) {
        std::erase(list[j].epochs, oldest);
        if (j < k && list[j].epochs.empty() && runs[j].grains != 0) {
          table_->free_run(runs[j]);
          runs[j] = {};
        }
      }
    }
  }
  // Copy: read every home, write every pinned copy, then link the pins.
  std::size_t total = 0;
  for (std::size_t k = 0; k < list.size(); ++k) {
    if (!list[k].epochs.empty() && runs[k].grains != 0) total += runs[k].grains * reader_table::grain;
  }
  if (total == 0) return;
  aligned_buffer buf(total);
  std::vector<io::read_request> reads;
  std::vector<io::write_request> writes;
  std::vector<std::size_t> which;
  std::size_t at = 0;
  for (std::size_t k = 0; k < list.size(); ++k) {
    if (list[k].epochs.empty() || runs[k].grains == 0) continue;
    reads.push_back({list[k].f.get(), list[k].offset, buf.p + at, list[k].len});
    writes.push_back({&pinned_file(), runs[k].first * reader_table::grain, buf.p + at, runs[k].grains * reader_table::grain});
    which.push_back(k);
    at += runs[k].grains * reader_table::grain;
  }
  // Consecutive grains and consecutive bytes of buf: one request (the runs were allocated
  // one after another, so most of a batch's copies land in one run of pheap.pinned).
  std::vector<io::write_request> merged;
  for (const io::write_request& w : writes) {
    if (!merged.empty() && merged.back().offset + merged.back().len == w.offset &&
        static_cast<const std::byte*>(merged.back().buf) + merged.back().len == w.buf) {
      merged.back().len += w.len;
    } else {
      merged.push_back(w);
    }
  }
  try {
    eng_->read(reads);
    eng_->write(merged);
  } catch (const error& e) {
    // The writer goes on; the readers that needed these copies are told why at their next read.
    for (std::size_t k : which) {
      for (std::uint64_t ep : list[k].epochs) table_->expire(ep, reader_table::expiry::pin_failed);
      table_->free_run(runs[k]);
    }
    note_pin_failure(e.what());
    return;
  }
  for (std::size_t k : which) {
    const auto [lo, hi] = std::minmax_element(list[k].epochs.begin(), list[k].epochs.end());
    table_->insert(list[k].kind, list[k].id, *lo, *hi, runs[k]);
  }
  stat_pins_ += which.size();
  stat_pin_bytes_ += total;
}

// Adjacent runs are punched as one hole: consecutive pins take consecutive grains (the
// table's next fit), and on a file system mounted with `discard` every hole punched waits for
// the device's discard (one per run made a reap of a busy reader's pins cost seconds).
// Called under preserve_mu_: grains freed by the reap are not handed out again before their
// hole is punched.
void store_impl::punch_pinned(std::vector<pinned_run> runs) {
  std::sort(runs.begin(), runs.end(), [](const pinned_run& a, const pinned_run& b) { return a.first < b.first; });
  for (std::size_t i = 0; i < runs.size();) {
    const std::uint64_t first = runs[i].first;
    std::uint64_t end = first + runs[i].grains;
    for (++i; i < runs.size() && runs[i].first == end; ++i) end += runs[i].grains;
    try {
      eng_->punch_hole(pinned_file(), first * reader_table::grain, (end - first) * reader_table::grain);
    } catch (const error& e) {
      note_pin_failure(e.what());  // space only: the grains are free in the table either way
    }
  }
}

void store_impl::note_pin_failure(const std::string& why) {
  std::lock_guard lk(poison_mu_);
  if (pin_failure_.empty()) pin_failure_ = why;
}

// After a commit is published: dead readers' slots freed, pins no active epoch needs dropped
// (their grains punched), views of epochs nobody reads any more released.
void store_impl::reap_readers() {
  if (!table_ || read_only_) return;
  {
    std::lock_guard pl(preserve_mu_);
    punch_pinned(table_->reap());
  }
  const std::vector<reader_epoch> live = table_->active_epochs();
  std::lock_guard lk(views_mu_);
  std::erase_if(views_, [&](const auto& kv) {
    return std::none_of(live.begin(), live.end(), [&](const reader_epoch& r) { return r.epoch == kv.first; });
  });
}

}  // namespace pheap::store
