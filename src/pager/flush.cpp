// flush(): makes every write that completed before the call durable as one store commit.
//
// Protocol (flusher::flush):
//   1. Report a store error that fault workers or the evictor recorded since the last flush
//      (error_channel.hpp), before writing anything. Its pages are dirty again by then, left
//      for the next flush.
//   2. Collect the candidate pages for the tracking mode (dirty_tracker.cpp).
//   3. Per chunk of batch_pages_ candidates (flush_chunk): claim them (`flush` bit;
//      page_table::claim_flush skips pages the evictor owns — the evictor writes them and step
//      4 waits for that — and, for a page filled again while its eviction's write is in
//      flight (I8), waits for that eviction batch first), take a tear-free copy into the
//      bounce buffer (per tracking mode, dirty_tracker.cpp), write the chunk with one
//      write_pages(), and only then release the claims, so a failed write marks them dirty
//      before the evictor could drop them.
//   4. Wait for an eviction batch in flight (its pages may hold writes older than this
//      flush), report any store error recorded meanwhile, and commit.
// A pager whose buffer follows a memory limit lends the bounce buffer's pages out of the
// buffer for steps 3-4 (buffer_budget.hpp B5) and gives its memory back to the kernel after,
// so that the reserve kept for the rest of the process need not hold it.
// prepare(root) is the same protocol ending in sparse_store::prepare (two-phase commit,
// sparse_store/FORMAT.md): the epoch is durable but not the watermark until confirm(), and
// meanwhile a write-back of a page it changed waits in the store (the evictor may stall on
// it: confirm promptly). confirm() takes mu_ too, so it never races a flush.
// Flushes are serialized by mu_. A flush never waits for a fault worker, and the
// evictor never waits for a flush, so flush and eviction cannot deadlock. A flush that throws
// leaves the previous epoch durable; the pages it had claimed stay dirty.
#include <algorithm>

#include "pager/flusher.hpp"
#include "pheap/error.hpp"

namespace pheap::paging {

std::uint64_t flusher::flush(std::span<const std::byte> root) {
  return flush_ending(root, "flush", &sparse_store::commit);
}

std::uint64_t flusher::flush_if_changed(std::span<const std::byte> root) {
  return flush_ending(root, "flush", &sparse_store::commit_if_changed);
}

std::uint64_t flusher::prepare(std::span<const std::byte> root) {
  return flush_ending(root, "prepare", &sparse_store::prepare);
}

void flusher::map_buffers(bool move) {
  if (move) tracker_.open_staging();
  bounce_ = anon_map(batch_pages_ * core_.ps, true);
}

std::uint64_t flusher::confirm() {
  std::lock_guard lk(mu_);
  if (core_.ro) throw error(errc::read_only, core_.name, "confirm", "the store is open read-only");
  return core_.store->confirm();
}

std::uint64_t flusher::flush_ending(std::span<const std::byte> root, const char* op,
                                       std::uint64_t (sparse_store::*finish)(std::span<const std::byte>)) {
  std::lock_guard lk(mu_);
  if (core_.ro) throw error(errc::read_only, core_.name, op, "the store is open read-only");
  // Checked before writing: a write of a page the prepared epoch changed would wait for a
  // confirm() that this lock keeps out.
  if (core_.store->prepared()) {
    throw error(errc::invalid_argument, core_.name, op, "an epoch is prepared: confirm() it first");
  }
  const std::uint64_t t0 = now_ns();
  core_.errors.throw_pending();
  const std::vector<std::size_t> cand = tracker_.collect_dirty();
  const bool lend = lends_bounce_ && !cand.empty();
  struct bounce_loan {  // B5: given back however the flush ends
    flusher& p;
    bool on;
    ~bounce_loan() {
      if (!on) return;
      p.bounce_.release_memory();
      p.core_.budget.give_back(p.batch_pages_);
    }
  } loan{*this, lend};
  if (lend) core_.budget.lend(batch_pages_);
  for (std::size_t i = 0; i < cand.size(); i += batch_pages_) {
    flush_chunk(cand.data() + i, std::min(batch_pages_, cand.size() - i));
  }
  // An eviction batch in flight may hold writes made before this flush: let it land.
  evictions_.wait_for_eviction_batch();
  core_.errors.throw_pending();
  const std::uint64_t epoch = ((*core_.store).*finish)(root);
  if (!cand.empty()) core_.budget.set_writeback_failing(false);  // writes work again
  core_.c.flushes.fetch_add(1, std::memory_order_relaxed);
  core_.c.flush_ns.fetch_add(now_ns() - t0, std::memory_order_relaxed);
  return epoch;
}

std::size_t flusher::flush_chunk(const std::size_t* cand, std::size_t n) {
  std::vector<std::size_t> claimed, later;
  claimed.reserve(n);
  const bool dirty_only = core_.mode == dirty_tracking::wp_sync;
  for (std::size_t k = 0; k < n; ++k) {
    switch (core_.table.claim_flush(cand[k], dirty_only)) {
      case flush_claim::claimed: claimed.push_back(cand[k]); break;
      case flush_claim::skipped: break;
      case flush_claim::in_write_back: later.push_back(cand[k]); break;
    }
  }
  // Filled again while their eviction's write is in flight (I8): written after it lands, so
  // that a write since the fill is not overwritten by the older bytes. A batch that begins
  // meanwhile may take such a page again (then it writes the page itself and step 4 waits).
  if (!later.empty()) core_.c.flush_write_back_waits.fetch_add(later.size(), std::memory_order_relaxed);
  while (!later.empty()) {
    evictions_.wait_for_eviction_batch();
    std::vector<std::size_t> again;
    for (const std::size_t p : later) {
      switch (core_.table.claim_flush(p, dirty_only)) {
        case flush_claim::claimed: claimed.push_back(p); break;
        case flush_claim::skipped: break;
        case flush_claim::in_write_back: again.push_back(p); break;
      }
    }
    later.swap(again);
  }
  if (claimed.empty()) return 0;
  write_claimed(claimed, bounce_.data(), core_.c.dirty_pages_written);
  return claimed.size();
}

std::size_t flusher::write_behind_chunk(const std::size_t* pages, std::size_t n, std::byte* bounce) {
  std::lock_guard lk(mu_);
  // A write of a page the prepared epoch changed would wait for a confirm() this lock keeps out.
  if (core_.store->prepared()) return 0;
  std::vector<std::size_t> claimed;
  claimed.reserve(n);
  for (std::size_t k = 0; k < n; ++k) {
    // Dirty only: one a flush wrote since needs nothing; one in write-back is the evictor's
    // (I8), and the next flush waits for it.
    if (core_.table.claim_flush(pages[k], true) == flush_claim::claimed) claimed.push_back(pages[k]);
  }
  if (claimed.empty()) return 0;
  write_claimed(claimed, bounce, core_.c.write_behind_pages);
  return claimed.size();
}

void flusher::write_claimed(const std::vector<std::size_t>& claimed, std::byte* into,
                            std::atomic<std::uint64_t>& written) {
  const std::size_t m = claimed.size();
  std::vector<std::byte*> dst(m);
  for (std::size_t i = 0; i < m; ++i) dst[i] = into + i * core_.ps;
  tracker_.take_copies(claimed.data(), m, dst.data());
  std::vector<page_write> writes(m);
  for (std::size_t i = 0; i < m; ++i) writes[i] = {claimed[i], dst[i]};
  try {
    core_.store->write_pages(writes);
  } catch (...) {
    for (auto p : claimed) core_.release_owned(p, ps::flush, ps::dirty);
    throw;
  }
  for (auto p : claimed) core_.release_owned(p, ps::flush);
  written.fetch_add(m, std::memory_order_relaxed);
  core_.c.bytes_written.fetch_add(m * core_.ps, std::memory_order_relaxed);
}

}  // namespace pheap::paging
