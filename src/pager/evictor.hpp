// src/pager/evictor.hpp — the evictor: the thread that keeps the bounded buffer within its
// watermarks (evictor.cpp: evict_batch as named steps). Owns its thread, its batch lock (held
// for one batch at a time), its staging range and bounce buffer, the batch's write-back in
// flight (write_back_mu_) and the clock hand's harvest state. Shares the page table, the
// budget, the resident clock, the victim cache, the store and the error channel through
// pager_core; wakes the fault service's read steps that wait for room
// (wake_prefetch_if_waiting), and waits for no fault, flush or fill but those of its own
// victims.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "pager/os/memory.hpp"
#include "pager/lock_rank.hpp"
#include "pager/pager_core.hpp"
#include "pager/staging.hpp"

namespace pheap::paging {

class fault_service;

// The victims of one eviction batch, sorted by page once claimed.
struct victim_batch {
  std::vector<std::size_t> pages;
  std::vector<bool> dirty;  // dirty as judged at claim time
  std::vector<bool> moved;  // arrived whole in the staging range (step 3)
  std::vector<bool> write;  // to be written back, as judged at step 4 (victims_to_write)
  std::size_t size() const noexcept { return pages.size(); }
};

class evictor {
 public:
  evictor(pager_core& core, fault_service& faults) noexcept : core_(core), faults_(faults) {}

  // Turns of the hand owed to a page that came back from the victim cache or a write-back in
  // flight (page_table.hpp I9; evictor.cpp step 1).
  static constexpr std::uint32_t kCameBackTurns = 1;

  // set_geometry: pages per batch (of the staging range and the bounce buffer).
  void configure(std::size_t batch_pages) noexcept { batch_pages_ = batch_pages; }
  std::size_t batch_pages() const noexcept { return batch_pages_; }
  // Dropped victim frames the staging range may keep mapped (staging.hpp step 3): one
  // emptying for several small batches. At most a batch, and at most 256 KiB.
  std::size_t retain_pages() const noexcept {
    return std::min(batch_pages_, std::max<std::size_t>(1, (std::size_t{256} << 10) / core_.ps));
  }
  // map_buffers, writable regions only: the staging range (`move`: where UFFDIO_MOVE exists)
  // and the bounce buffer.
  void map_buffers(bool move);
  // start_threads: the thread (pheap-evict), returned for its CPU clock; join: stop_threads,
  // once the stop flag is set and the budget's waits are woken.
  std::thread& start();
  void join() noexcept;
  void close() noexcept { staging_.close(); }  // teardown, threads stopped

  // Waits until no eviction batch runs (the one in flight, if any, has landed or failed).
  void wait_for_eviction_batch();
  // Pages [first, end) the heap released, whose data the store has just discarded: the
  // resident ones nobody owns leave the region without a write, as the kernel backend's
  // MADV_REMOVE drops them (a refault reads zeros, from the store's "no data"), so that no
  // flush or eviction writes them and their slots are free again. Between batches, and only
  // if no batch is in flight (else nothing: the pages stay and a flush or eviction writes
  // their stale bytes, which costs space only, as before). A page filling, owned, pinned or
  // in write-back is left the same way. Returns the pages dropped.
  std::size_t drop_released(std::size_t first, std::size_t end);
  // Keeps eviction batches out while held (wait_evictor_idle, white-box tests): the batch in
  // flight, if any, has landed or failed when it returns; the evictor waits for the lock.
  using batch_lock = std::unique_lock<ranked_mutex<lock_rank::evict_batch>>;
  batch_lock hold_between_batches();
  // A fill of a `writing` page (I8): its bytes from the batch's bounce buffer into dst; false
  // when the write landed meanwhile (the store has them now).
  bool copy_from_write_back(std::size_t page, std::byte* dst);
  // check_invariants' part: "" when the staging range keeps no more dropped frames than its
  // bound, else the violation.
  std::string check_invariants() const;
  const staging& staging_range() const noexcept { return staging_; }

 private:
  void evictor_main();
  // Evicts up to `want` pages; returns how many were freed. The steps, in order:
  std::size_t evict_batch(std::size_t want);
  victim_batch claim_victims(std::size_t want);
  // wp_async, step 1's first part: written pages → dirty|ref in their words, write-protected
  // again (the clock's reference bit for written pages).
  void harvest_writes();
  // Claims page (popped by the hand) into v; false (put back behind the hand) if it changed.
  bool claim_victim(std::size_t page, bool dirty, victim_batch& v);
  // Claims up to kNeighbourRun pages on each side of victim `page` that are unreferenced
  // evictable pages too (dirty ones only if `dirty_ok`), while v holds fewer than want + a
  // 64th of the buffer (at most 2 * kNeighbourRun more, and the staging range's
  // batch_pages_).
  void claim_neighbours(std::size_t page, std::size_t want, victim_batch& v, bool dirty_ok);
  static constexpr std::size_t kNeighbourRun = 15;
  std::size_t drop_victims(const victim_batch& v);
  // Huge pages on a read-only region: each victim still one PMD mapping is moved whole into an
  // empty pool block (huge_pool.hpp) before drop_victims empties the rest.
  void recycle_victims(const victim_batch& v);
  void move_out_victims(victim_batch& v);
  // Indexes into v of the pages to write back, sorted; v.write flags the same pages.
  std::vector<std::size_t> victims_to_write(victim_batch& v);
  // Adds to `out` those of `verify` (judged clean) whose staged bytes differ from the store's.
  void add_changed(const victim_batch& v, const std::vector<std::size_t>& verify,
                   std::vector<std::size_t>& out);
  // A page's bytes against the store's copy without I/O: zeros when the store has no data
  // for it, else CRC32C against page_crc(); unknown when the store cannot tell.
  enum class store_copy { same, differs, unknown };
  store_copy compare_with_store(std::size_t page, const std::byte* bytes);
  // Step 5: the staged bytes of the pages to write (indexes `out`) into bounce_, which
  // is then published as the batch's write-back (write_back_pages_).
  void copy_out_victims(const victim_batch& v, const std::vector<std::size_t>& out);
  // Step 5: keeps the moved victims in the victim cache, drops the staging range and gives
  // their buffer slots back; per index into v, whether it was kept (for finish_eviction).
  std::vector<bool> lend_victim_slots(const victim_batch& v);
  // Step 5, once their bytes are in the bounce buffer: the victims of `out` absent and
  // `writing` (I8), their waiting faults woken.
  void lend_for_write(const victim_batch& v, const std::vector<std::size_t>& out);
  // Step 5, after lend_victim_slots: the other moved victims absent for good (with `kept`,
  // I7), their waiting faults woken.
  void let_clean_victims_go(const victim_batch& v, const std::vector<bool>& kept);
  // Step 6: the store write's error (write-back marked failing), or null when it landed.
  // Not recorded yet: evict_batch records it once restore_victims made the pages dirty again.
  std::exception_ptr write_victims(const victim_batch& v, const std::vector<std::size_t>& out);
  // After the write: `writing` cleared on the pages of `out` (absent ones `kept` per `kept`).
  void land_victims(const victim_batch& v, const std::vector<std::size_t>& out,
                    const std::vector<bool>& kept);
  // After a failed write: the pages of `out` back into the region, or marked dirty where a
  // fault filled them again; no longer `moved`.
  void restore_victims(victim_batch& v, const std::vector<std::size_t>& out);
  // Unpublishes the batch's write-back, after land_victims or restore_victims.
  void end_write_back();
  // The moved victims counted as evictions (and their runs); returns how many.
  std::size_t count_evictions(const victim_batch& v);
  // Victim cache steps 1-2 for those of pages[0..n) (sorted; their bytes in the store, or
  // about to be where writing[k]) that the store has data for (or writing[k]) and the cache
  // wants, copied from staging slot slots[k], or from the region where slots is null
  // (read-only; writing null too): per page, whether it was kept (ps::kept for
  // finish_eviction). All false with no cache.
  std::vector<bool> keep_victims(const std::size_t* pages, const std::size_t* slots,
                                 const bool* writing, std::size_t n);
  // A victim has left the region: absent (with `kept`, I7), its waiting faults woken.
  void finish_eviction(std::size_t page, std::uint32_t kept);

  pager_core& core_;
  fault_service& faults_;
  std::thread thread_;
  // Held for the whole of every eviction batch, and only for one: the evictor lets go between
  // batches, and does not take it again while someone waits for it (batch_waiters_), so a
  // flush under constant eviction pressure is not starved (it was: the evictor once held it
  // for a whole round, and a round lasts as long as faults outpace it).
  ranked_mutex<lock_rank::evict_batch> batch_mu_;
  std::atomic<unsigned> batch_waiters_{0};
  std::size_t batch_pages_ = 1;
  // harvest_writes' state: pages the hand examined since, the walks, the last one's cost in
  // entries walked.
  std::size_t examined_since_harvest_ = ~std::size_t(0) / 2;
  std::vector<std::pair<std::size_t, std::size_t>> harvest_runs_;
  std::size_t harvest_entries_ = 0;
  staging staging_;  // victims are moved here, judged and written
  // The pages to write, copied out of the staging range (step 5); before that, in the same
  // batch, the pages read back to judge a victim (step 4, stores without page_crc).
  anon_map bounce_;
  // The pages of the batch whose write is in flight, sorted; page write_back_pages_[k] is
  // slot k of bounce_. Written by the evictor in steps 5 and 6, read by fills of
  // `writing` pages; both under write_back_mu_, which keeps the next batch's copy_out from
  // overwriting a slot a fill is copying.
  ranked_mutex<lock_rank::leaf> write_back_mu_;
  std::vector<std::size_t> write_back_pages_;
};

}  // namespace pheap::paging
