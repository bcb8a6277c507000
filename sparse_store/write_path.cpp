// sparse_store/write_path.cpp — write_pages() and discard() (FORMAT.md "Write path").
//
// write_pages, a protocol of named steps:
//   1. plan_writes   a page listed twice is written once (its last occurrence); checksums are
//                    computed outside every lock; the pages' map blocks are loaded; the page
//                    map picks each page's home — in place if the working epoch wrote it
//                    already, else the home its previous version does not use — waiting where
//                    a running commit still needs that home (page_map.hpp "barrier"); the batch
//                    counts as in flight, so it lands wholly in one epoch
//   2. protect       a home some registered reader's older epoch still names is copied to
//                    pheap.pinned first (pins.cpp: never a wait for the reader)
//   3. write_homes   every copy to its home, one engine call (segments created on first use,
//                    noted for the commit's fdatasync and directory fsync)
//   4. publish       the copies become the pages' newest versions (page_map::end_write); after
//                    a failed write nothing is published (a page rewritten in place reads as
//                    either version, else errc::io) and the store is poisoned
// Nothing is durable before the next commit; a crash leaves the copies in homes no durable map
// names.
//
// discard changes only the working map (pages read as zeros at once); their homes are punched
// after the commit that frees them (commit.cpp step 5), never before: the durable epoch may
// still name them.
#include <unordered_map>

#include "pheap/crc32c.hpp"
#include "pheap/error.hpp"
#include "store_impl.hpp"

namespace pheap::store {

namespace {

// The largest request write_homes builds from consecutive pages.
constexpr std::size_t max_request = 4u << 20;

}  // namespace

struct store_impl::write_batch {
  std::vector<page_map::planned_write> plan;
  std::vector<const void*> bufs;  // per plan entry
  std::uint64_t epoch = 0;
};

void store_impl::write_pages(std::span<const page_write> batch) {
  check_usable("write_pages");
  check_writable("write_pages");
  if (batch.empty()) return;
  for (const auto& w : batch) check_page(w.page, w.buf, "write_pages");
  write_batch w = plan_writes(batch);
  try {
    if (table_) protect_pages(w.plan);
    write_homes(w);
  } catch (const error& e) {
    poison("writing page copies failed: " + std::string(e.what()));
    map_->end_write(w.plan, false);
    throw;
  }
  map_->end_write(w.plan, true);
  changes_.fetch_add(1, std::memory_order_relaxed);
  stat_pages_written_ += w.plan.size();
}

store_impl::write_batch store_impl::plan_writes(std::span<const page_write> batch) {
  write_batch w;
  std::vector<std::uint64_t> pages;
  if (batch.size() == 1) {
    w.bufs.push_back(batch[0].buf);
    pages.push_back(batch[0].page);
  } else {
    std::unordered_map<std::uint64_t, std::size_t> last;
    last.reserve(batch.size());
    for (std::size_t i = 0; i < batch.size(); ++i) last[batch[i].page] = i;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (last[batch[i].page] != i) continue;
      w.bufs.push_back(batch[i].buf);
      pages.push_back(batch[i].page);
    }
  }
  w.plan.resize(pages.size());
  for (std::size_t k = 0; k < pages.size(); ++k) {
    w.plan[k].page = pages[k];
    w.plan[k].crc = crc32c(w.bufs[k], page_size_);
  }
  map_->load_pages(pages);
  w.epoch = map_->begin_write(w.plan, [this] { check_usable("write_pages"); });
  return w;
}

void store_impl::write_homes(write_batch& w) {
  segs_.gather(
      w.plan.size(),
      [&](std::size_t k, bool patient) {
        const std::uint64_t seg = segs_.segment_of(w.plan[k].page);
        bool created = false;
        auto f = segs_.for_write(seg, created, patient);
        note_written(w.epoch, seg, created);
        return f;
      },
      [&](std::size_t first, std::size_t end, const std::vector<std::shared_ptr<io::file>>& files) {
        // Consecutive pages going to consecutive offsets of one home from consecutive memory
        // (a flush of a contiguous range) become one request: large O_DIRECT transfers.
        std::vector<io::write_request> reqs;
        reqs.reserve(end - first);
        for (std::size_t k = first; k < end; ++k) {
          const auto& p = w.plan[k];
          const std::uint64_t off = segs_.offset_of(p.page, p.target);
          const auto* buf = static_cast<const std::byte*>(w.bufs[k]);
          if (!reqs.empty()) {
            io::write_request& r = reqs.back();
            if (r.f == files[k].get() && r.offset + r.len == off &&
                static_cast<const std::byte*>(r.buf) + r.len == buf && r.len < max_request) {
              r.len += page_size_;
              continue;
            }
          }
          reqs.push_back({files[k].get(), off, buf, page_size_});
        }
        eng_->write(reqs);
      });
}

void store_impl::note_written(std::uint64_t epoch, std::uint64_t seg, bool created) {
  std::lock_guard lk(written_mu_);
  epoch_files& f = written_[epoch];
  f.segments.insert(seg);
  f.created = f.created || created;
}

void store_impl::discard(std::uint64_t first_page, std::uint64_t count) {
  check_usable("discard");
  check_writable("discard");
  if (count == 0) return;
  if (first_page >= page_count_ || count > page_count_ - first_page) {
    throw error(errc::invalid_argument, dir_, "discard",
                "pages [" + std::to_string(first_page) + ", +" + std::to_string(count) +
                    ") exceed the capacity of " + std::to_string(page_count_) + " pages");
  }
  map_->load_range(first_page, first_page + count);
  map_->discard(first_page, first_page + count);
  changes_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace pheap::store
