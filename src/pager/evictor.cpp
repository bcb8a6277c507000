// The evictor: keeps the bounded buffer (buffer_budget.hpp) within its watermarks.
//
// The evictor wakes at the high watermark (or when a worker waits) and evicts down to the low
// watermark in batches. A batch (evictor::evict_batch) runs these steps:
//   1. claim_victims: a clock hand over the resident pages (resident_clock.hpp) with second
//      chance picks victims, clean pages first, and claims them (page_table::claim_evict:
//      resident, unowned, unpinned → evict). The `ref` bit is set by fills, by write-protect
//      faults (wp_sync) and, in wp_async, by harvest_writes: a PAGEMAP_SCAN of the span of
//      the hand's pages (or of each run of them, when they are few in a wide span) that moves
//      the written bits of the page tables into the words (dirty|ref) and write-protects those
//      pages again, twice per revolution of the hand: a page written between the last two
//      harvests is kept, one written since the latest is not seen until the next (wp_sync
//      sees every write at once). Reads it never sees, so a page the application only reads
//      looks unused to it and is chosen first, clean; when such a page comes back soon after
//      (its fill takes the victim cache's copy or the bounce buffer of its write in flight),
//      the fill gives it kCameBackTurns more passes of the hand (page_table.hpp I9): S18 graph
//      construction at 1/4 of its datastore, 9 % fewer faults, 4 % fewer store reads and 3 %
//      less time (bench/DECISIONS.md "a turn for pages that came back"). The hand costs O(1)
//      per page looked at, whatever the capacity of the region. Each victim takes along up
//      to kNeighbourRun pages on either side that are unreferenced victims-to-be as well
//      (claim_neighbours), so victims leave in runs.
//   2. drop_victims, read-only region only: copies kept in the victim cache (where it is on),
//      then one MADV_DONTNEED per contiguous run; done.
//   3. move_out_victims: UFFDIO_MOVE each contiguous run into the staging range (staging.hpp).
//      The move is atomic per page: after it the region page is missing (an access faults to a
//      worker, which sees `evict`, sets `wanted` and leaves the thread waiting), and the
//      staging page holds every byte ever written to the region page. This closes the
//      eviction race. A page that did not move is released untouched.
//   4. victims_to_write: wp_sync: the `dirty` bit (writes to a clean page trap to a worker
//      first, I5); all_resident: all; wp_async: the `dirty` bit (harvested). wp_async pages
//      judged clean are compared with the store's copy (add_changed), because a write may have
//      landed between the harvest and the move and the uffd-wp bit does not travel with MOVE:
//      with zeros when the store has no data for the page, else by CRC32C against
//      sparse_store::page_crc() — no I/O; only a store that cannot tell is read back
//      (evict_verify_reads).
//   5. copy_out_victims: the pages to write are copied into a bounce buffer (the store never
//      writes from a registered range), which is published as the batch's write-back
//      (write_back_pages_); lend_for_write makes them absent and `writing` (I8) and wakes the
//      faults waiting on them (I3): from here a fault on one fills it from the bounce buffer
//      (copy_from_write_back) while its write is in flight, instead of waiting for the write
//      (with a tiny buffer the victims are often the pages the application touches next:
//      bench/DECISIONS.md "fills from a write-back in flight"). Then lend_victim_slots keeps a
//      copy of every victim in the
//      victim cache (victim_cache.hpp: handed to the kernel with MADV_FREE, where it is on),
//      drops the batch's staging slots (emptied with one MADV_DONTNEED for several small
//      batches, staging.hpp step 3: the frames kept meanwhile count outside the buffer) and
//      gives the victims' buffer slots back at once: their bytes are out of the buffer now
//      (in the bounce buffer, the store or the cache), so a fault waiting on a full buffer
//      reads its page while the victims are written, not after (bench/DECISIONS.md "slots given
//      back before the write-back"). let_clean_victims_go then makes the
//      victims judged clean absent for good (the store has their bytes) and wakes theirs.
//   6. write_victims: one store write_pages() batch from the bounce buffer; then land_victims
//      clears `writing` (an absent page gets `kept` now, I7) and wakes the faults that found
//      the page refilling. On a store write error, restore_victims puts every page of the
//      write back into the region from the bounce buffer, dirty, taking its slot again
//      beyond the buffer if need be (buffer_budget.hpp B2's exception), or, where a fault has
//      filled it again meanwhile, marks it dirty; only then is the error kept for the next
//      flush() (error_channel.hpp), which may take it without waiting for this batch.
//      Either way the batch's write-back is unpublished last, once no page says `writing`
//      (end_write_back).
#include <pthread.h>
#include <sys/mman.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <thread>

#include "pager/evictor.hpp"
#include "pager/fault_service.hpp"
#include "pheap/crc32c.hpp"

namespace pheap::paging {

std::thread& evictor::start() {
  thread_ = std::thread([this] { evictor_main(); });
  ::pthread_setname_np(thread_.native_handle(), "pheap-evict");
  return thread_;
}

void evictor::join() noexcept {
  if (thread_.joinable()) thread_.join();
}

evictor::batch_lock evictor::hold_between_batches() {
  batch_waiters_.fetch_add(1, std::memory_order_seq_cst);
  std::unique_lock b(batch_mu_);
  batch_waiters_.fetch_sub(1, std::memory_order_release);
  return b;
}

void evictor::wait_for_eviction_batch() { (void)hold_between_batches(); }

void evictor::evictor_main() {
  for (;;) {
    if (!core_.budget.wait_for_kick()) return;
    bool idle_round = false;
    // Evict down to the low watermark; with waiters, at least one page each round. The batch
    // lock is held per batch; a flush waiting for it gets in before the next batch.
    for (;;) {
      if (core_.stop.load()) return;
      while (batch_waiters_.load(std::memory_order_acquire) != 0 && !core_.stop.load()) {
        std::this_thread::yield();
      }
      const std::size_t excess = core_.budget.to_evict();
      if (excess == 0) break;
      core_.budget.note_if_short();  // limit_pool.hpp P3: evicting below a fair share
      const std::size_t want = std::min(excess, batch_pages_);
      const std::uint64_t t0 = now_ns();
      std::size_t freed;
      {
        std::lock_guard batch(batch_mu_);
        if (core_.stop.load()) return;
        freed = evict_batch(want);
      }
      core_.c.evict_ns.fetch_add(now_ns() - t0, std::memory_order_relaxed);
      core_.budget.notify_freed();
      faults_.wake_prefetch_if_waiting();
      if (freed == 0) {
        idle_round = true;  // everything owned, pinned or failing: back off briefly
        break;
      }
    }
    core_.budget.end_round(idle_round);
    if (idle_round) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

std::size_t evictor::evict_batch(std::size_t want) {
  victim_batch v = claim_victims(want);
  if (v.size() == 0) return 0;
  if (core_.ro) return drop_victims(v);
  move_out_victims(v);
  const std::vector<std::size_t> out = victims_to_write(v);
  copy_out_victims(v, out);
  lend_for_write(v, out);
  const std::vector<bool> kept = lend_victim_slots(v);
  let_clean_victims_go(v, kept);
  const std::exception_ptr failed = write_victims(v, out);
  const bool written = !failed;
  if (written) {
    land_victims(v, out, kept);
  } else {
    restore_victims(v, out);  // the victims judged clean are gone all the same
    // Only now, with every page of the write dirty again: a flush that reports the error
    // (its step 1 does not wait for this batch) must leave them to the next flush, and a
    // flush that collected its pages before they were dirty must see the error at step 4.
    core_.errors.record(failed);
  }
  end_write_back();
  const std::size_t n = count_evictions(v);
  return written ? n : 0;  // write-back fails: the evictor backs off
}

void evictor::map_buffers(bool move) {
  if (move) {
    // Huge: the staging range keeps the victims' 2 MiB mappings whole, and its dropped slots
    // give their huge pages to the pool for the next fills (huge_pool.hpp).
    staging_.open(core_.uffd, core_.pagemap_fd, core_.base, core_.ps, batch_pages_, retain_pages(),
                  core_.name, core_.huge_on ? &core_.huge : nullptr);
    staging_.count_recycled(&core_.c.huge_recycled, &core_.c.huge_evicted_split);
  }
  bounce_ = anon_map(batch_pages_ * core_.ps, true);
}

std::string evictor::check_invariants() const {
  // Between batches the eviction's staging range keeps at most `retain` dropped frames
  // mapped, the bound pheap's memory outside the buffer counts (staging.hpp step 3).
  if (staging_.is_open() && core_.pagemap_fd >= 0) {
    const std::size_t frames = staging_.staged_frames();
    const std::size_t bound = staging_.retain() * (core_.ps / os_page_size());
    if (frames > bound) {
      return "eviction staging range holds " + std::to_string(frames) + " frames, more than the " +
             std::to_string(bound) + " it may keep (staging.hpp step 3)";
    }
  }
  return {};
}

// ---- 1. choose and claim victims ------------------------------------------------------------
namespace {
// Keep runs contiguous: sort by page (victims may wrap around the end of the region).
void sort_by_page(victim_batch& v) {
  std::vector<std::size_t> idx(v.size());
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](auto a, auto b) { return v.pages[a] < v.pages[b]; });
  std::vector<std::size_t> pages;
  std::vector<bool> dirty;
  for (auto i : idx) {
    pages.push_back(v.pages[i]);
    dirty.push_back(v.dirty[i]);
  }
  v.pages.swap(pages);
  v.dirty.swap(dirty);
}

// Contiguous runs in sorted pages (pager_stats::evict_runs).
std::uint64_t runs_of(const std::vector<std::size_t>& pages) {
  std::uint64_t runs = 0;
  for (std::size_t i = 0; i < pages.size(); ++i) runs += (i == 0 || pages[i] != pages[i - 1] + 1);
  return runs;
}
}  // namespace

victim_batch evictor::claim_victims(std::size_t want) {
  victim_batch v;
  v.pages.reserve(want);
  core_.clock.take_published();
  if (core_.mode == dirty_tracking::wp_async && !core_.ro) harvest_writes();
  // Clean pages first: up to `lookahead` pages past the hand are looked at for clean ones;
  // the dirty ones seen on the way are taken, oldest first, only when the clean ones do not
  // fill the batch. At most 2 + kCameBackTurns passes over the ring (the first may only clear
  // refs, the next ones spend the turns of pages that came back: I9); that bound is also what
  // lets a fault waiting for a slot go on whatever the turns (a hand that passed a page over
  // without spending its turn would leave a buffer of pages that came back with no victim).
  // A turn keeps a page for one more revolution where a batch is small against the ring (out
  // of core: rounds of 2 % of the buffer, B7); in a ring of a few dozen pages whose pages are
  // mostly referenced the hand may go round within one batch and spend the turn and claim the
  // page in it (tests/pager/victim_cache_test.cpp, the test of this order, uses 128 pages).
  const std::size_t lookahead = std::max<std::size_t>(64, want * 8);
  const std::size_t limit = (2 + kCameBackTurns) * core_.clock.size();
  std::vector<std::size_t> dirty_seen;
  std::size_t p = 0;
  for (std::size_t examined = 0; v.size() < want && examined < limit; ++examined) {
    if (examined >= lookahead && v.size() + dirty_seen.size() >= want) break;
    if (!core_.clock.next(p)) break;
    const std::uint32_t s = core_.table.load(p);
    assert(ps::kind(s) == ps::resident);  // C1
    if (!ps::evictable(s) || (s & ps::ref)) {
      if (s & ps::ref) core_.table.clear_ref(p, s);  // second chance
      core_.clock.pass(p);
      continue;
    }
    if (ps::turns(s) > 0) {  // came back soon after its last eviction: still in use (I9)
      core_.table.spend_turn(p, s);
      core_.clock.pass(p);
      continue;
    }
    if (!core_.ro && ((s & ps::dirty) || core_.mode == dirty_tracking::all_resident)) {
      dirty_seen.push_back(p);
    } else if (claim_victim(p, false, v)) {
      claim_neighbours(p, want, v, core_.ro);
    }
  }
  examined_since_harvest_ += v.size() + dirty_seen.size();
  std::size_t k = 0;
  for (; k < dirty_seen.size() && v.size() < want; ++k) {
    if (claim_victim(dirty_seen[k], true, v)) claim_neighbours(dirty_seen[k], want, v, true);
  }
  core_.clock.put_front(std::vector<std::size_t>(dirty_seen.begin() + static_cast<std::ptrdiff_t>(k),
                                            dirty_seen.end()));
  sort_by_page(v);
  return v;
}

void evictor::harvest_writes() {
  // Twice per revolution of the hand: often enough that a page written within the last half
  // revolution is seen as referenced, rarely enough that the walk stays small per page
  // evicted. Each harvest also write-protects again every page written since the last one,
  // and the application's next write to each such page is a minor fault (the kernel resolves
  // it, wp_async, but it is a trap on the application's thread): eight harvests per
  // revolution cost S18 1/4 about 2 M more minor faults per run than two (11.0 M against
  // 9.0-9.1 M) and 7 % of its time, for as many store reads; the staler bits cost 3-13 % more
  // store reads at 1/8 and 1/2 (bench/DECISIONS.md "two harvests per revolution"). And never more
  // than
  // kEntriesPerExamined entries walked per page the hand examined: a ring of a few pages (a
  // tiny buffer) is revolved by every batch, and harvesting it that often walked its span
  // once per page evicted, a third of the evictor's time at 4 KiB pages and 16 (bench/DECISIONS.md
  // "harvest bounded per page examined"). Such
  // a ring's reference bits then say "written within the last few revolutions"; out of core
  // (a ring of thousands of pages over a span a few times its size) the first bound is the
  // larger one.
  constexpr std::size_t kHarvestsPerRevolution = 2;
  constexpr std::size_t kEntriesPerExamined = 64;
  if (examined_since_harvest_ < std::max(core_.clock.size() / kHarvestsPerRevolution,
                                         harvest_entries_ / kEntriesPerExamined)) {
    return;
  }
  examined_since_harvest_ = 0;
  // Only the pages in the ring are walked: every resident page but those installed since
  // take_published(), whose written bits stay in the page tables until the next harvest (or
  // the next flush's scan: a walk that leaves a page out loses nothing, it only records
  // later). A walk skips the unpopulated parts of its range and visits every entry of the
  // populated page tables, evicted pages' included; a call costs about as much as visiting
  // kScanCallEntries entries. So one walk over the span of the ring, or, where the ring is
  // small against its span (a tiny buffer in a larger heap, harvested every round), one per
  // run of consecutive ring pages (bench/DECISIONS.md "the harvest walks the ring, not the
  // region": with a 4-page buffer of 64 KiB
  // pages the walks over the region were 18 % of the evictor's time).
  std::size_t first = 0, last = 0;
  if (!core_.clock.span(first, last)) return;
  constexpr std::size_t kScanCallEntries = 1024;
  const std::size_t entries_per_page = core_.ps / os_page_size();
  harvest_runs_.assign(1, {first, last});
  if (core_.clock.size() * kScanCallEntries < (last - first + 1) * entries_per_page) core_.clock.runs(harvest_runs_);
  harvest_entries_ = harvest_runs_.size() == 1 ? (last - first + 1) * entries_per_page
                                               : harvest_runs_.size() * kScanCallEntries;
  std::lock_guard lk(core_.scan_mu);
  bool lost = false;
  const auto note = [&](const page_region& reg) {
    const auto [x, y] = core_.pages_of(reg);
    for (std::size_t q = x; q <= y; ++q) {
      if (!core_.table.note_written(q)) lost = true;
    }
  };
  constexpr std::uint64_t flags = pm_scan_wp_matching | pm_scan_check_wpasync;
  constexpr std::uint64_t required = page_is_written | page_is_present;
  long r = 0;
  for (const auto& [a, b] : harvest_runs_) {
    // A run's walk finds few regions: a small result buffer (the kernel allocates one of that
    // size per call).
    r = harvest_runs_.size() == 1
            ? pagemap_walk<512>(core_.pagemap_fd, core_.page_addr(a), core_.page_addr(b + 1), flags,
                                required, 0, note)
            : pagemap_walk<32>(core_.pagemap_fd, core_.page_addr(a), core_.page_addr(b + 1), flags,
                               required, 0, note);
    if (r < 0) break;
  }
  if (r < 0 || lost) {
    // Pages may have been re-protected without their write being recorded: every resident
    // page counts as written (safe; the next flush writes them all).
    core_.count_every_page_written("write scan", r < 0 ? std::strerror(static_cast<int>(-r)) : "page not resident");
  }
}

bool evictor::claim_victim(std::size_t page, bool dirty, victim_batch& v) {
  std::uint32_t was = 0;
  if (!core_.table.claim_evict(page, was)) {
    core_.clock.pass(page);  // changed meanwhile (pinned, flushed): stays in the ring
    return false;
  }
  v.pages.push_back(page);
  v.dirty.push_back(dirty || (was & ps::dirty) || core_.mode == dirty_tracking::all_resident);
  return true;
}

// Victims in runs: the clock's victims are scattered (graph ingestion: 1.1 pages per run), and
// each run costs one UFFDIO_MOVE with its TLB flush, an IPI on this VM (~10 µs, bench/DECISIONS.md
// "what this machine charges a pager"), where
// a run of many pages costs one flush for all. So the pages next to a victim go with it while
// they would be victims too once the hand came to them: resident, evictable, not referenced
// since the hand last passed them, and, next to a clean victim, clean (clean pages first, as
// the hand takes them); the run stops at the first that is not. They are claimed out of the
// hand's order (resident_clock.hpp C3). A run may take the batch past `want` (the evictor
// often wants one or two pages, for a waiting fault), by at most 1/64 of the buffer below its
// low watermark, and never past the staging range (batch_pages_).
void evictor::claim_neighbours(std::size_t page, std::size_t want, victim_batch& v,
                                  bool dirty_ok) {
  const std::size_t over = std::min<std::size_t>(2 * kNeighbourRun, core_.budget.target_pages() / 64);
  const std::size_t cap = std::min(batch_pages_, want + over);
  const bool all_dirty = core_.mode == dirty_tracking::all_resident;
  for (const bool up : {true, false}) {
    for (std::size_t d = 1; d <= kNeighbourRun && v.size() < cap; ++d) {
      if (!up && d > page) break;
      const std::size_t q = up ? page + d : page - d;
      if (q >= core_.npages) break;
      const std::uint32_t s = core_.table.load(q);
      if (!ps::evictable(s) || (s & (ps::ref | ps::turns_mask)) || !core_.clock.may_claim_out_of_order(q)) break;
      if (!dirty_ok && ((s & ps::dirty) || all_dirty)) break;
      std::uint32_t was = 0;
      if (!core_.table.claim_evict(q, was)) break;
      core_.clock.claimed_out_of_order(q);
      v.pages.push_back(q);
      v.dirty.push_back((was & ps::dirty) || all_dirty);
    }
  }
}

// ---- released pages (not a batch step) ------------------------------------------------------
std::size_t evictor::drop_released(std::size_t first, std::size_t end) {
  if (core_.ro || first >= end) return 0;
  std::unique_lock b(batch_mu_, std::try_to_lock);
  if (!b.owns_lock()) return 0;  // a batch in flight: not worth waiting for (see evictor.hpp)
  core_.clock.take_published();  // C1: every live entry in the ring, where claimed_away finds it
  std::vector<std::size_t> pages;
  std::uint32_t was = 0;
  for (std::size_t p = first; p < std::min(end, core_.npages); ++p) {
    if (!ps::evictable(core_.table.load(p)) || !core_.table.claim_evict(p, was)) continue;
    core_.clock.claimed_away(p);  // its entry goes stale (C3)
    pages.push_back(p);
  }
  const std::size_t n = pages.size();
  if (n == 0) return 0;
  // Owned (`evict`): a fault on one of them waits (I3) until finish_eviction wakes it, and
  // its retry faults on the absent page, which the store now reads as zeros (I1: no entry).
  for_each_run(pages.data(), n, n, [&](std::size_t i, std::size_t j) {
    os::drop(core_.page_addr(pages[i]), (j - i) * core_.ps);
  });
  for (const std::size_t p : pages) finish_eviction(p, 0);
  core_.budget.release(n);  // I6
  core_.c.released_pages_dropped.fetch_add(n, std::memory_order_relaxed);
  return n;
}

// ---- 2. read-only: just drop ----------------------------------------------------------------
std::size_t evictor::drop_victims(const victim_batch& v) {
  const std::size_t n = v.size();
  const std::vector<bool> kept = keep_victims(v.pages.data(), nullptr, nullptr, n);
  if (core_.huge_on) recycle_victims(v);
  for_each_run(v.pages.data(), n, n, [&](std::size_t i, std::size_t j) {
    os::drop(core_.page_addr(v.pages[i]), (j - i) * core_.ps);
  });
  for (std::size_t i = 0; i < n; ++i) finish_eviction(v.pages[i], kept[i] ? ps::kept : 0);
  core_.budget.release(n);
  core_.c.evictions.fetch_add(n, std::memory_order_relaxed);
  if (core_.huge_on) core_.c.huge_evictions.fetch_add(n, std::memory_order_relaxed);
  core_.c.evict_runs.fetch_add(runs_of(v.pages), std::memory_order_relaxed);
  return n;
}

// A read-only region has no staging range (nothing is written back, staging.hpp): its huge
// victims go to the pool straight from the region, as the staging's drop gives a writable
// region's to it, so that the next fill needs no fresh huge page (milliseconds on a VM that
// hands freed memory back to its host). Only a page that is one PMD mapping (a split page
// would move as 512 small ones, and a fill from that block would not be PMD-mapped either),
// only up to the pool's keep, and only where the move is allowed: a page a write made
// PROT_READ (fault_workers.cpp refuse_write) is refused and dropped with the rest.
void evictor::recycle_victims(const victim_batch& v) {
  if (core_.pagemap_fd < 0) return;  // cannot tell a huge page from 512 small ones
  for (const std::size_t p : v.pages) {
    std::byte* a = core_.page_addr(p);
    const long long huge = pagemap_bytes(core_.pagemap_fd, a, a + core_.ps, page_is_huge | page_is_present);
    if (huge < 0 || static_cast<std::size_t>(huge) != core_.ps) {
      if (huge >= 0 && pagemap_bytes(core_.pagemap_fd, a, a + core_.ps, page_is_present) > 0) {
        core_.c.huge_evicted_split.fetch_add(1, std::memory_order_relaxed);
      }
      continue;
    }
    std::byte* b = core_.huge.take_empty();
    if (!b) return;  // the pool holds its keep (or cannot map): the rest is dropped
    std::size_t moved = 0;
    if (uffd_move_whole(core_.uffd, b, a, core_.ps, &moved) == 0) {
      core_.huge.give_full(b);
      core_.c.huge_recycled.fetch_add(1, std::memory_order_relaxed);
    } else if (moved == 0) {
      core_.huge.give_empty(b);
    } else {
      core_.huge.discard(b);  // part of it moved: the rest of the page is dropped below
    }
  }
}

// ---- 3. move out, run by run; what moved is read from the page tables -------------------------
void evictor::move_out_victims(victim_batch& v) {
  v.moved = staging_.move_out(v.pages.data(), v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v.moved[i]) {  // still in the region, untouched
      core_.release_owned(v.pages[i], ps::evict);
      core_.clock.publish(v.pages[i]);  // C1: resident again
    }
  }
}

// ---- 4. judge -------------------------------------------------------------------------------
std::vector<std::size_t> evictor::victims_to_write(victim_batch& v) {
  std::vector<std::size_t> out;
  std::vector<std::size_t> verify;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v.moved[i]) continue;
    if (v.dirty[i] || (core_.table.load(v.pages[i]) & ps::dirty)) {
      out.push_back(i);
    } else if (core_.mode == dirty_tracking::wp_async) {
      verify.push_back(i);
    }
  }
  if (!verify.empty()) add_changed(v, verify, out);
  std::sort(out.begin(), out.end());
  v.write.assign(v.size(), false);
  for (const std::size_t i : out) v.write[i] = true;
  return out;
}

void evictor::add_changed(const victim_batch& v, const std::vector<std::size_t>& verify,
                             std::vector<std::size_t>& out) {
  std::vector<page_read> reads;
  std::vector<std::size_t> read_back;
  for (const std::size_t i : verify) {
    switch (compare_with_store(v.pages[i], staging_.slot(i))) {
      case store_copy::same: break;
      case store_copy::differs: out.push_back(i); break;
      case store_copy::unknown:
        // Into the eviction's bounce buffer: free until step 5 (the last batch's write-back
        // ended with it, write_back_pages_ is empty), and these reads are compared by then.
        reads.push_back({v.pages[i], bounce_.data() + reads.size() * core_.ps});
        read_back.push_back(i);
        break;
    }
  }
  if (reads.empty()) return;
  // The store cannot tell without I/O (it keeps no checksum for the page in DRAM): read back.
  core_.c.evict_verify_reads.fetch_add(reads.size(), std::memory_order_relaxed);
  bool ok = true;
  try {
    core_.store->read_pages(reads);
  } catch (...) {
    ok = false;  // cannot prove them clean: write them
  }
  for (std::size_t k = 0; k < read_back.size(); ++k) {
    const std::size_t i = read_back[k];
    if (!ok || std::memcmp(staging_.slot(i), reads[k].buf, core_.ps) != 0) out.push_back(i);
  }
}

evictor::store_copy evictor::compare_with_store(std::size_t page, const std::byte* bytes) {
  if (!core_.store->may_have_data(page)) {
    return std::memcmp(bytes, core_.zero.data(), core_.ps) == 0 ? store_copy::same : store_copy::differs;
  }
  const std::optional<std::uint32_t> c = core_.store->page_crc(page);
  if (!c) return store_copy::unknown;
  return crc32c(bytes, core_.ps) == *c ? store_copy::same : store_copy::differs;
}

// ---- 5. copy out, keep, drop the staging range, give the slots back, let the victims go ------
void evictor::copy_out_victims(const victim_batch& v, const std::vector<std::size_t>& out) {
  for (std::size_t k = 0; k < out.size(); ++k) {
    std::memcpy(bounce_.data() + k * core_.ps, staging_.slot(out[k]), core_.ps);
  }
  // Published before any of them says `writing` (I8); `out` is sorted, and so are v.pages.
  std::lock_guard lk(write_back_mu_);
  assert(write_back_pages_.empty());
  for (const std::size_t i : out) write_back_pages_.push_back(v.pages[i]);
}

bool evictor::copy_from_write_back(std::size_t page, std::byte* dst) {
  std::lock_guard lk(write_back_mu_);
  const auto it = std::lower_bound(write_back_pages_.begin(), write_back_pages_.end(), page);
  if (it == write_back_pages_.end() || *it != page) return false;  // landed: the store has it
  const auto slot = static_cast<std::size_t>(it - write_back_pages_.begin());
  std::memcpy(dst, bounce_.data() + slot * core_.ps, core_.ps);
  return true;
}

void evictor::end_write_back() {
  std::lock_guard lk(write_back_mu_);
  write_back_pages_.clear();
}

std::vector<bool> evictor::lend_victim_slots(const victim_batch& v) {
  std::vector<std::size_t> pages, slots;
  std::unique_ptr<bool[]> writing(new bool[v.size()]);
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v.moved[i]) {
      writing[pages.size()] = v.write[i];
      pages.push_back(v.pages[i]);
      slots.push_back(i);
    }
  }
  const std::vector<bool> kept_moved = keep_victims(pages.data(), slots.data(), writing.get(), pages.size());
  staging_.drop(v.size());
  core_.budget.release(pages.size());  // B1: these pages hold no slot from here to step 6
  std::vector<bool> kept(v.size(), false);
  for (std::size_t k = 0; k < slots.size(); ++k) kept[slots[k]] = kept_moved[k];
  return kept;
}

void evictor::lend_for_write(const victim_batch& v, const std::vector<std::size_t>& out) {
  for (const std::size_t i : out) {
    if (core_.table.lend_for_write(v.pages[i]) & ps::wanted) core_.wake_page(v.pages[i]);
  }
}

void evictor::let_clean_victims_go(const victim_batch& v, const std::vector<bool>& kept) {
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v.moved[i] && !v.write[i]) finish_eviction(v.pages[i], kept[i] ? ps::kept : 0);
  }
}

// ---- 6. write back, then land (or put back) -------------------------------------------------
std::exception_ptr evictor::write_victims(const victim_batch& v, const std::vector<std::size_t>& out) {
  if (out.empty()) return nullptr;
  std::vector<page_write> writes;
  writes.reserve(out.size());
  for (std::size_t k = 0; k < out.size(); ++k) {
    writes.push_back({v.pages[out[k]], bounce_.data() + k * core_.ps});
  }
  try {
    core_.store->write_pages(writes);
  } catch (...) {
    core_.budget.set_writeback_failing(true);
    return std::current_exception();
  }
  core_.budget.set_writeback_failing(false);
  core_.c.evicted_dirty.fetch_add(out.size(), std::memory_order_relaxed);
  core_.c.bytes_written.fetch_add(out.size() * core_.ps, std::memory_order_relaxed);
  return nullptr;
}

void evictor::land_victims(const victim_batch& v, const std::vector<std::size_t>& out,
                              const std::vector<bool>& kept) {
  for (const std::size_t i : out) {
    const std::uint32_t was = core_.table.write_landed(v.pages[i], kept[i] ? ps::kept : 0);
    if (was & ps::wanted) core_.wake_page(v.pages[i]);
    // Filled again from the bounce buffer: its copy in the cache came back, as a take() would
    // have (victim_cache.hpp step 4: counted, and dropped by the next batch).
    if (kept[i] && ps::kind(was) != ps::absent) core_.victims.came_back(v.pages[i]);
  }
}

void evictor::restore_victims(victim_batch& v, const std::vector<std::size_t>& out) {
  // Nothing may be lost: every page that was to be written and is still absent goes back into
  // the region from the bounce buffer, dirty, in a slot taken again (B2's exception:
  // write-back fails); one that a fault filled again from the bounce buffer meanwhile (I8) is
  // marked dirty where it is. Neither counts as evicted (no longer `moved`). A copy in the
  // victim cache is never read: the page's word does not say `kept` (I7), and its next
  // eviction keeps a new one.
  for (std::size_t k = 0; k < out.size(); ++k) {
    const std::size_t page = v.pages[out[k]];
    v.moved[out[k]] = false;
    if (!core_.table.take_back_failed(page)) {
      core_.wake_page(page);
      continue;
    }
    core_.budget.retake(1);
    const int rc = uffd_copy(core_.uffd, core_.page_addr(page), bounce_.data() + k * core_.ps, core_.ps, 0);
    if (rc != 0) {
      // The page's bytes are only in the bounce buffer, and the next batch reuses it.
      std::fprintf(stderr, "pheap: pager %s: cannot reinstall page %zu after a failed write-back: %s\n",
                   core_.name.c_str(), page, std::strerror(rc));
      std::abort();
    }
    core_.table.install(page, ps::dirty);
    core_.clock.publish(page);  // C1: resident again
    core_.wake_page(page);
  }
}

std::size_t evictor::count_evictions(const victim_batch& v) {
  std::vector<std::size_t> pages;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v.moved[i]) pages.push_back(v.pages[i]);
  }
  core_.c.evictions.fetch_add(pages.size(), std::memory_order_relaxed);
  if (core_.huge_on) core_.c.huge_evictions.fetch_add(pages.size(), std::memory_order_relaxed);
  core_.c.evict_runs.fetch_add(runs_of(pages), std::memory_order_relaxed);
  return pages.size();
}

std::vector<bool> evictor::keep_victims(const std::size_t* pages, const std::size_t* slots,
                                           const bool* writing, std::size_t n) {
  std::vector<bool> kept(n, false);
  if (!core_.victims.is_open()) return kept;
  // victim_cache.hpp step 4: the copies faults took back go first, and before any keep() (a
  // drop during a keep of the same page would leave it a copy with zeros in it).
  core_.victims.drop_taken();
  if (n == 0) return kept;
  std::vector<std::size_t> given;
  given.reserve(n);
  for (std::size_t k = 0; k < n; ++k) {
    // A page the store has no data for, and will have none for after this batch's write,
    // refills with zeros without looking at the cache (read_fills): a copy of it would be
    // memory and a memcpy for nothing.
    const bool has_data = (writing && writing[k]) || core_.store->may_have_data(pages[k]);
    if (!has_data || !core_.victims.wants(pages[k])) continue;
    given.push_back(pages[k]);
    kept[k] = true;
  }
  core_.victims.prepare(given.data(), given.size());
  for (std::size_t k = 0; k < n; ++k) {
    if (kept[k]) core_.victims.keep(pages[k], slots ? staging_.slot(slots[k]) : core_.page_addr(pages[k]));
  }
  core_.victims.give_back(given.data(), given.size(), n);
  core_.c.victims_kept.fetch_add(given.size(), std::memory_order_relaxed);
  return kept;
}

void evictor::finish_eviction(std::size_t page, std::uint32_t kept) {
  // Faults that waited on it refault and refill from the kept copy or the store, which both
  // have its newest bytes.
  if (core_.table.finish_eviction(page, kept) & ps::wanted) core_.wake_page(page);
}

}  // namespace pheap::paging
