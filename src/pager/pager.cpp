// pheap::pager: construction (feature choice, mapping, registration), teardown, hints,
// options and statistics. See include/pheap/pager.hpp for the contract and
// src/pager/pager_impl.hpp for the internal structure.
#include "pheap/pager.hpp"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <cassert>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <sstream>

#include "pheap/env.hpp"
#include "pager/os/threads.hpp"
#include "pager/pager_impl.hpp"
#include "pheap/error.hpp"

namespace pheap {

// The spellings of the option enums are written once, in the PHEAP_* table (env.cpp), in
// enum order.
const char* to_string(dirty_tracking t) noexcept {
  return env::name_of_choice(env::var::dirty_tracking, static_cast<unsigned>(t));
}

std::ostream& operator<<(std::ostream& os, dirty_tracking t) { return os << to_string(t); }

const char* to_string(fault_filling f) noexcept {
  return env::name_of_choice(env::var::fault_fill, static_cast<unsigned>(f));
}

const char* to_string(victim_caching v) noexcept {
  return env::name_of_choice(env::var::victim_cache, static_cast<unsigned>(v));
}

const char* to_string(huge_pages_mode h) noexcept {
  return env::name_of_choice(env::var::huge_pages, static_cast<unsigned>(h));
}

// ---- options ----------------------------------------------------------------------------------
namespace {

void validate(const pager_options& o, const std::string& name) {
  auto bad = [&](const std::string& why) {
    throw error(errc::invalid_argument, name, "map pager", why);
  };
  if (!(o.high_watermark > 0 && o.high_watermark <= 1)) bad("high_watermark must be in (0, 1]");
  if (!(o.low_watermark >= 0 && o.low_watermark < o.high_watermark)) {
    bad("low_watermark must be in [0, high_watermark)");
  }
  if (o.fault_threads < 1 || o.fault_threads > 64) bad("fault_threads must be in [1, 64]");
  if (o.write_behind_ms > pager_options::write_behind_max_ms) {
    bad("write_behind_ms must be at most " + std::to_string(pager_options::write_behind_max_ms));
  }
  if (o.read_ahead > pager_options::read_ahead_max && o.read_ahead != pager_options::read_ahead_auto) {
    bad("read_ahead must be at most " + std::to_string(pager_options::read_ahead_max) +
        " pages (or read_ahead_auto)");
  }
}
}  // namespace

pager_options pager_options::from_env() { return from_env(pager_options{}); }

// Each variable is parsed and range-checked by the table (pheap/env.hpp); what is left here
// is where the values go and the one relation between two of them.
pager_options pager_options::from_env(pager_options base) {
  using env::var;
  if (auto v = env::size(var::buffer_size)) base.buffer_size = *v;
  if (auto v = env::size(var::memory_headroom)) base.memory_headroom = *v;
  const auto high = env::fraction(var::high_watermark);
  const auto low = env::fraction(var::low_watermark);
  if (high) base.high_watermark = *high;
  if (low) base.low_watermark = *low;
  if ((high || low) && base.low_watermark >= base.high_watermark) {
    // Name the variable that was set (the low one when both are).
    std::ostringstream value;
    value << (low ? *low : *high);
    env::bad_env(env::describe(low ? var::low_watermark : var::high_watermark).name, value.str(),
                 "low watermark must be below the high watermark");
  }
  if (auto i = env::choice(var::dirty_tracking)) base.tracking = static_cast<dirty_tracking>(*i);
  if (auto i = env::choice(var::victim_cache)) base.victim_cache = static_cast<victim_caching>(*i);
  if (auto i = env::choice(var::fault_fill)) base.fault_fill = static_cast<fault_filling>(*i);
  if (auto i = env::choice(var::huge_pages)) base.huge_pages = static_cast<huge_pages_mode>(*i);
  if (auto v = env::count(var::fault_threads)) base.fault_threads = *v;
  if (auto v = env::count(var::read_ahead)) base.read_ahead = *v;
  if (auto v = env::count(var::write_behind)) base.write_behind_ms = static_cast<unsigned>(*v);
  if (auto v = env::count(var::debug)) base.debug = *v == 1;
  return base;
}

std::ostream& operator<<(std::ostream& os, const pager_stats& s) {
  os << "faults: read " << s.read_faults << " write " << s.write_faults << " wp " << s.wp_faults
     << " | fills: zero " << s.zero_fills << " store " << s.pages_read << " (" << s.bytes_read
     << " B) read-ahead " << s.read_ahead_pages << " (" << s.read_ahead_windows << " windows, "
     << s.read_ahead_passed << " of " << s.read_ahead_planned << " planned passed, "
     << s.read_ahead_gated << " gated) zero-ahead "
     << s.zero_ahead_pages << " prefetch " << s.prefetched_pages << " (dropped "
     << s.prefetch_dropped << ") read steps " << s.read_steps << " (" << s.read_step_pages
     << " pages)" << " victim cache " << s.victim_hits
     << " write-back " << s.write_back_hits
     << " | on the faulting thread " << s.thread_fills << (s.thread_fill ? "" : " (workers fill)")
     << " retries " << s.thread_fill_retries
     << " | evictions " << s.evictions << " in " << s.evict_runs << " runs (dirty " << s.evicted_dirty << ", verified "
     << s.evict_verify_reads << ", kept " << s.victims_kept << ", waited for " << s.evict_waits
     << (s.victim_cache ? "" : ", no victim cache")
     << ") | flushes " << s.flushes << " pages " << s.dirty_pages_written
     << " retakes " << s.flush_retakes << " after write-back " << s.flush_write_back_waits
     << " | write-behind " << (s.write_behind ? "on" : "off") << " pages " << s.write_behind_pages
     << " rounds " << s.write_behind_rounds << " (" << s.write_behind_ns / 1000 << " us)"
     << " | released dropped " << s.released_pages_dropped
     << " | huge " << (s.huge_pages ? "on" : "off") << " fills " << s.huge_fills << " fallbacks "
     << s.huge_fallback_fills << " (no block " << s.huge_fallback_no_block << ", move "
     << s.huge_fallback_move;
  if (s.huge_fallback_move_errno != 0) {
    os << " (" << std::strerror(s.huge_fallback_move_errno) << ")";
  }
  os << ", split " << s.huge_fallback_split << ") mapped " << s.huge_mapped_bytes << " B evictions " << s.huge_evictions << " recycled " << s.huge_recycled << " split " << s.huge_evicted_split
     << " fresh " << s.huge_fresh << " pool " << s.huge_pool_blocks << " promotions " << s.huge_promotions
     << " (failed " << s.huge_promote_failed << ", " << s.huge_promote_ns / 1000 << " us, rounds "
     << s.huge_promote_rounds << ")"
     << (s.huge_pages_why.empty() ? "" : " (" + s.huge_pages_why + ")")
     << " | written " << s.bytes_written << " B"
     << " | resident " << s.resident_pages << " peak " << s.peak_resident_pages << " pinned "
     << s.pinned_pages << " | buffer waits " << s.buffer_waits << " poisoned " << s.poisoned_pages
     << " | refreshes " << s.refreshes << " dropped " << s.invalidated_pages << " unpoisoned "
     << s.unpoisoned_pages
     << " | time: fault " << s.fault_ns / 1000 << " us flush " << s.flush_ns / 1000
     << " us evict " << s.evict_ns / 1000 << " us | cpu: workers " << s.fault_cpu_ns / 1000
     << " us evictor " << s.evict_cpu_ns / 1000 << " us | buffer " << s.buffer_bytes
     << " B from " << s.buffer_source << " | target " << s.buffer_target_bytes << " B (lowest "
     << s.buffer_lowest_target_bytes << ", " << s.buffer_resamples << " samples) "
     << s.buffer_target_source;
  return os;
}

namespace paging {

// Construction: the steps below, in this order. Nothing is started before the last one, so a
// step that throws leaves only descriptors and mappings to release (the anon_maps unmap
// themselves).
pager_impl::pager_impl(std::unique_ptr<sparse_store> store, const pager_options& opt)
    : core_(std::move(store)) {
  if (!core_.store) throw error(errc::invalid_argument, "", "map pager", "null store");
  set_geometry(opt);
  const uffd_features& f = probe_features(core_.name);
  choose_tracking(opt.tracking, f);
  follow_memory_limit(f, opt.debug);
  try {
    open_descriptors(f);
    map_region();
    register_region();
    map_buffers(f);
    start_threads(opt.fault_threads);
  } catch (...) {
    stop_threads();
    close_descriptors();
    throw;
  }
}

// Page size and capacity from the store, options checked; the page table, the buffer budget
// and the batch sizes.
void pager_impl::set_geometry(const pager_options& opt) {
  core_.name = core_.store->path();
  validate(opt, core_.name);
  core_.ps = core_.store->page_size();
  core_.cap = core_.store->capacity();
  core_.ro = core_.store->read_only();
  debug_ = opt.debug;
  headroom_asked_ = opt.memory_headroom;
  if (core_.ps < os_page_size() || (core_.ps & (core_.ps - 1)) != 0 || core_.cap == 0 || core_.cap % core_.ps != 0) {
    throw error(errc::invalid_argument, core_.name, "map pager",
                "page size must be a power of two ≥ the system page size and divide the capacity");
  }
  if (core_.ro && opt.read_only_map_bytes != 0 && opt.read_only_map_bytes < core_.cap) {
    // The whole capacity where the address space allows it (map_region takes this
    // reservation): a refresh() may find the heap grown past the part in use by a writer
    // beside this reader. Where it does not (ENOMEM: RLIMIT_AS below the capacity), the part
    // given only; the rest is never read.
    if (void* p = os::reserve_aligned(core_.cap, core_.ps, false)) {
      core_.region_map.p = p;
      core_.region_map.len = core_.cap;
    } else {
      core_.cap = (opt.read_only_map_bytes + core_.ps - 1) / core_.ps * core_.ps;
    }
  }
  core_.npages = core_.cap / core_.ps;
  core_.table = page_table(core_.npages);
  core_.clock.size_for(core_.npages);
  // Batches: ~8 MiB (evict) / ~16 MiB (flush) per batch, at least one page; an eviction batch
  // at most half the buffer. Under a memory cgroup, or with an automatic buffer, at most 1/16
  // of the memory limit each (their bounce buffers come out of the limit too). They are sized
  // before the buffer: an explicit buffer_size is checked against what the cgroup leaves after
  // pheap's memory outside the buffer (own_bytes_outside_buffer), which they are most of at
  // large pages (2 MiB pages in a 142 MiB cgroup: 24 MiB; counted at one page per batch, as
  // before, a 110 MiB buffer there was kept and OOM-killed at its first fills).
  std::optional<memory_sample> limit;
  std::optional<memory_limit> source = memory_limit::detect();
  limit_is_cgroup_ = source->source() != memory_limit::kind::ram;
  const memory_sample at_open = source->sample();  // one sample: the batches, the check, the buffer
  std::uint64_t batch_cap = ~std::uint64_t(0);
  if (opt.buffer_size == 0 || limit_is_cgroup_) batch_cap = at_open.limit / 16;
  evictor_.configure(std::clamp<std::size_t>(std::min<std::uint64_t>(8ull << 20, batch_cap) / core_.ps, 1, 512));
  flusher_.configure(std::clamp<std::size_t>(std::min<std::uint64_t>(16ull << 20, batch_cap) / core_.ps, 1, 1024));
  fault_threads_ = opt.fault_threads;
  victim_caching_ = opt.victim_cache;
  fill_asked_ = opt.fault_fill;  // thread_fill is resolved with the tracking (choose_tracking)
  huge_mode_ = opt.huge_pages;  // resolved by choose_tracking
  core_.huge_asked = opt.huge_pages != huge_pages_mode::off;
  promoter_.configure(opt.huge_promote_ms);
  faults_.configure(opt.read_ahead);
  write_behind_.configure(opt.write_behind_ms);  // before the buffer: its bounce is memory outside it
  // An explicit size more than the memory cgroup leaves is clamped: the buffer is sized and
  // follows the limit as an automatic one, at most that size (exceeds_memory_cgroup).
  const bool clamped = opt.buffer_size != 0 && limit_is_cgroup_ && exceeds_memory_cgroup(at_open, opt.buffer_size);
  if (opt.buffer_size == 0 || clamped) {
    limit = at_open;
    buffer_source_ = source->name();
    // The buffers of this process's other pagers that follow the same limit are not "in use"
    // for this one: they share the limit with it (limit_pool.hpp).
    limit_pool_ = limit_pool::of(source->name(), limit_is_cgroup_);
    limit_pool_->reap();
    limit->used -= std::min<std::uint64_t>(limit->used, static_cast<std::uint64_t>(
                                                            std::max<std::int64_t>(0, limit_pool_->held())));
  } else {
    source.reset();
    limit_is_cgroup_ = false;  // a fixed buffer follows no limit
  }
  choose_buffer(opt, limit, clamped);
  faults_.bound_queue(core_.budget.pages());
  if (source) {
    // The run-time reserve (B4): what the rest of the process may grow between two samples,
    // 1/32 of the limit, at least 4 MiB, or twice a recent growth within one sample
    // (memory_limit.hpp limit_follower). Smaller than the
    // headroom at open, which must also cover what the application allocates before the first
    // sample. The flush bounce buffer is not in it: a flush lends it out of the buffer (B5).
    const std::uint64_t reserve = std::max<std::uint64_t>(4ull << 20, limit->limit / 32);
    follower_ = std::make_shared<limit_follower>(std::move(*source), core_.ps, kBookkeeping, reserve);
  }
  flusher_.lend_bounce(follower_ != nullptr);  // B5
  evictor_.configure(std::min(evictor_.batch_pages(), std::max<std::size_t>(1, core_.budget.pages() / 2)));
}

namespace {
std::string mib(std::uint64_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return b;
}
// "64 GiB" for sizes of a GiB and more, else as mib().
std::string gib_or_mib(std::uint64_t bytes) {
  if (bytes < (1ull << 30)) return mib(bytes);
  char b[32];
  std::snprintf(b, sizeof b, "%.4g GiB", static_cast<double>(bytes) / (1ull << 30));
  return b;
}
}  // namespace

// What `limit` leaves for the buffer after the memory in use, a headroom and pheap's own memory
// outside the buffer; `why` gets the figures.
std::uint64_t pager_impl::bytes_the_limit_leaves(const memory_sample& limit, std::string& why) const {
  // Headroom: for the application's own growth after the pager opened and the store's I/O
  // (io_uring rings and worker stacks, page-map blocks): 1/8 of the limit, at least 16 MiB,
  // or what the application said it will allocate (pager_options::memory_headroom) if more.
  const std::uint64_t by_default = std::max<std::uint64_t>(16ull << 20, limit.limit / 8);
  const std::uint64_t headroom = std::max(by_default, headroom_asked_);
  const std::uint64_t own = own_bytes_outside_buffer();
  const std::uint64_t taken = limit.used + headroom + own;
  const std::uint64_t free = limit.limit > taken ? limit.limit - taken : 0;
  why = "limit " + mib(limit.limit) + ", in use " + mib(limit.used) + ", headroom " + mib(headroom) +
        (headroom_asked_ > by_default ? " (memory_headroom)" : "") + ", pheap's own " + mib(own);
  // Each buffer page also costs up to kBookkeeping bytes of its own (the resident clock).
  return free / (core_.ps + kBookkeeping) * core_.ps;
}

// Whether an explicit buffer_size (PHEAP_BUFFER_SIZE, pheap-graph --buffer-size) is more than
// the process's memory cgroup leaves for a buffer now: filled, it would get the process
// OOM-killed. Such a buffer is CLAMPED (pheap/pager_options.hpp, buffer_size): sized and
// following the limit as an automatic one, never above the size given, with one line on
// stderr. Without a cgroup limit (RAM only) nothing is clamped.
// `cg` is the cgroup's sample at open; pheap's own memory is counted at the batch sizes in
// force (set_geometry sizes them first). Called only under a cgroup limit.
bool pager_impl::exceeds_memory_cgroup(const memory_sample& cg, std::uint64_t bytes) const {
  std::string why;
  return std::min<std::uint64_t>(bytes, std::uint64_t{core_.npages} * core_.ps) > bytes_the_limit_leaves(cg, why);
}

// The buffer: buffer_size when given; else, or when it is more than a memory cgroup leaves
// (`clamped`: then at most buffer_size), what the memory limit (memory_limit.hpp) leaves.
// Below the minimum (buffer_budget::min_pages, for a region at least that large):
// invalid_argument for an explicit size, unavailable for an automatic one, naming the minimum.
void pager_impl::choose_buffer(const pager_options& opt, const std::optional<memory_sample>& limit,
                               bool clamped) {
  const std::uint64_t min_bytes = buffer_budget::min_pages * core_.ps;
  const bool region_allows = core_.npages >= buffer_budget::min_pages;
  std::uint64_t bytes = opt.buffer_size;
  if (!limit) {
    if (bytes / core_.ps < buffer_budget::min_pages && region_allows) {
      throw error(errc::invalid_argument, core_.name, "map pager",
                  "buffer_size " + std::to_string(bytes) + " bytes is below the minimum of " +
                      std::to_string(buffer_budget::min_pages) + " pages (" +
                      std::to_string(min_bytes) + " bytes at this page size)");
    }
    buffer_source_ = "buffer_size option";
  } else {
    std::string why;
    bytes = bytes_the_limit_leaves(*limit, why);
    const std::string cgroup = buffer_source_;
    buffer_source_ += ": " + why;
    if (bytes / core_.ps < buffer_budget::min_pages && region_allows) {
      throw error(errc::unavailable, core_.name, "map pager",
                  "the memory limit leaves " + mib(bytes) + " for the buffer (" + buffer_source_ +
                      "): below the minimum of " + std::to_string(buffer_budget::min_pages) +
                      " pages (" + std::to_string(min_bytes) +
                      " bytes); raise the limit" + (clamped ? "" : " or set PHEAP_BUFFER_SIZE"));
    }
    if (clamped) {
      std::fprintf(stderr,
                   "pheap: pager %s: buffer_size %s (PHEAP_BUFFER_SIZE or the option) is more than the "
                   "memory %s leaves for it (%s): using %s and following the limit, at most %s, so that "
                   "the kernel does not kill the process\n",
                   core_.name.c_str(), mib(opt.buffer_size).c_str(), cgroup.c_str(), why.c_str(),
                   mib(bytes).c_str(), mib(opt.buffer_size).c_str());
      buffer_source_ = "buffer_size option " + mib(opt.buffer_size) + ", clamped to the memory " + buffer_source_;
    }
  }
  core_.budget.configure(core_.npages, static_cast<std::size_t>(bytes / core_.ps), opt.high_watermark,
                    opt.low_watermark);
  if (opt.debug) {
    std::fprintf(stderr, "pheap: pager %s: buffer %s (%zu pages of %zu B) from %s\n",
                 core_.name.c_str(), mib(core_.budget.pages() * core_.ps).c_str(), core_.budget.pages(), core_.ps,
                 buffer_source_.c_str());
  }
}

// An automatic buffer follows its memory limit (buffer_budget.hpp B4), sampled by the evictor
// every kFollowPeriod. Not where the region may have to evict and cannot (writable, no
// UFFDIO_MOVE: choose_tracking accepted it only because the buffer held the whole region).
void pager_impl::follow_memory_limit(const uffd_features& f, bool debug) {
  if (!follower_ || (!core_.ro && !f.move)) return;
  buffer_source_ += "; then follows it every " + std::to_string(kFollowPeriod.count()) +
                    " ms (reserve " + mib(follower_->reserve()) +
                    ", or twice a recent burst of the rest of the process)";
  // In the pool: the buffer's slots and the memory outside it (but for the flush's bounce
  // buffer, which a flush lends out of the buffer, B5), touched or not yet.
  const std::uint64_t fixed = own_bytes_outside_buffer() - flusher_.batch_pages() * std::uint64_t(core_.ps);
  if (!core_.budget.share(limit_pool_, static_cast<std::int64_t>(core_.ps + kBookkeeping),
                     static_cast<std::int64_t>(fixed))) {
    limit_pool_ = limit_pool::of(core_.name, false);  // no slot left: alone, as before the pool
    (void)core_.budget.share(limit_pool_, static_cast<std::int64_t>(core_.ps + kBookkeeping),
                        static_cast<std::int64_t>(fixed));
  }
  core_.budget.follow(
      [this, f = follower_, debug, fixed, shown = core_.budget.pages()](std::size_t resident) mutable {
        // The pool (limit_pool.hpp): what the other members hold is theirs (P2), and so is
        // this pager's memory outside its buffer; under contention at most an equal share (P3).
        limit_pool& pool = *limit_pool_;
        pool.reap();  // P4
        const auto others = static_cast<std::uint64_t>(std::max<std::int64_t>(0, pool.held() - core_.budget.pooled()));
        std::size_t t = (*f)(resident, others + fixed);
        pool.set_cap(static_cast<std::int64_t>(f->cap()));
        const int n = pool.members();
        if (n > 1 && pool.contended_by_other(core_.budget.member(), std::chrono::steady_clock::now())) {
          t = std::min<std::size_t>(t, f->cap() / static_cast<std::uint64_t>(n) /
                                           static_cast<std::uint64_t>(core_.budget.unit()));
        }
        // Debug: one line when the target moved by 1/8 of the maximum since the last line.
        const std::size_t shown_now = std::clamp(t, std::size_t(0), core_.budget.pages());
        if (debug && (shown_now > shown ? shown_now - shown : shown - shown_now) * 8 >= core_.budget.pages()) {
          std::fprintf(stderr, "pheap: pager %s: buffer target %s (%s)\n", core_.name.c_str(),
                       mib(shown_now * core_.ps).c_str(), f->describe().c_str());
          shown = shown_now;
        }
        return t;
      },
      kFollowPeriod);
  core_.budget.follow_limit();  // the first sample sets the pool's cap before the region can fault
}

// The pager's memory outside the buffer that is not yet in use when the buffer is sized: the
// bounce buffers of flush and eviction (a batch each; the eviction's also takes a batch's
// verification reads), the dropped victim frames the staging range keeps (staging.hpp step
// 3), one bounce per fault thread (worker_bounce_pages), the zero page. (The page table
// grows with the pages used, 1/1024 of them at 4 KiB pages: the reserve and the follower's
// samples cover it.)
std::uint64_t pager_impl::own_bytes_outside_buffer() const {
  return (flusher_.batch_pages() + evictor_.batch_pages() + evictor_.retain_pages() +
          fault_threads_ * faults_.worker_bounce_pages() + faults_.zero_ahead_pages() +
          write_behind_.bounce_pages() +
          (core_.huge_asked ? kHugeKeep : 0) +
          (huge_mode_ == huge_pages_mode::automatic ? 1 : 0)) *  // a promotion's second copy
         std::uint64_t(core_.ps);
}

// The tracking mode: the one asked for if this kernel has what it needs, else errc::unavailable
// naming what is missing; `automatic` takes the first that works.
void pager_impl::choose_tracking(dirty_tracking asked, const uffd_features& f) {
  core_.have_poison = f.poison;
  // Read-only regions evict with MADV_DONTNEED (nothing can be written), so only writable
  // bounded regions need UFFDIO_MOVE.
  const bool bounded = core_.budget.evicts() && !core_.ro;
  const bool can_async = f.wp && f.wp_async && f.pagemap_scan && f.move;
  const bool can_sync = f.wp && (f.move || !bounded);
  const bool can_all = f.move || !bounded;
  auto missing = [&](const char* mode, const char* need) {
    throw error(errc::unavailable, core_.name, std::string("map pager (dirty tracking ") + mode + ")",
                std::string("this kernel lacks ") + need);
  };
  // Huge pages on a writable region: wp_sync first. wp_async resolves the first write after a
  // protect (every flush's) in the kernel, which splits the page's 2 MiB mapping into 4 KiB
  // entries until its eviction; wp_sync's fault un-protects the whole page, which stays one
  // PMD mapping (huge_pool.hpp, "Tracking"). Not where faulting-thread fills were asked for
  // (wp_sync's write faults would be SIGBUS too). Not for auto, whose fills are 4 KiB and whose
  // promoter maps pages split that way huge again: it keeps wp_async and the faulting-thread
  // fills that go with it (with wp_sync's worker fills an in-core build took 0.93x of off's
  // time; bench/DECISIONS.md "auto's policy").
  const bool huge_sync = huge_mode_ == huge_pages_mode::always && !core_.ro && can_sync &&
                         huge_refusal(f).empty() && fill_asked_ != fault_filling::faulting_thread;
  switch (asked) {
    case dirty_tracking::automatic:
      if (huge_sync) core_.mode = dirty_tracking::wp_sync;
      else if (can_async) core_.mode = dirty_tracking::wp_async;
      else if (can_sync) core_.mode = dirty_tracking::wp_sync;
      else if (can_all) core_.mode = dirty_tracking::all_resident;
      else missing("automatic", "UFFDIO_MOVE (Linux 6.8) and write-protect faults (5.7), so "
                   "only a buffer holding the whole region is possible");
      break;
    case dirty_tracking::wp_async:
      if (!can_async) {
        missing("wp_async", "UFFD_FEATURE_WP_ASYNC + PAGEMAP_SCAN (Linux 6.7) or UFFDIO_MOVE (6.8)");
      }
      core_.mode = dirty_tracking::wp_async;
      break;
    case dirty_tracking::wp_sync:
      if (!can_sync) missing("wp_sync", f.wp ? "UFFDIO_MOVE (Linux 6.8), needed for a bounded buffer"
                                             : "userfaultfd write-protect (Linux 5.7)");
      core_.mode = dirty_tracking::wp_sync;
      break;
    case dirty_tracking::all_resident:
      if (!can_all) missing("all_resident", "UFFDIO_MOVE (Linux 6.8), needed for a bounded buffer");
      core_.mode = dirty_tracking::all_resident;
      break;
  }
  core_.wp_registered = !core_.ro && (core_.mode == dirty_tracking::wp_async || core_.mode == dirty_tracking::wp_sync);
  // Fills on the faulting thread: asked for, or automatic where the mode allows them.
  const bool wp_sync_faults = core_.wp_registered && core_.mode == dirty_tracking::wp_sync;
  core_.thread_fill = fill_asked_ == fault_filling::faulting_thread ||
                 (fill_asked_ == fault_filling::automatic && !wp_sync_faults);
  if (core_.thread_fill && wp_sync_faults) {
    throw error(errc::unavailable, core_.name, "map pager (fault_fill faulting_thread)",
                "dirty tracking resolved to wp_sync, whose write-protect faults would be SIGBUS "
                "too; faulting-thread fills need wp_async (Linux 6.8) or all_resident");
  }
  choose_huge_pages(f);
  write_behind_.resolve();
}

// Why huge pages cannot be had whatever the mode and the open ("" where they can).
std::string pager_impl::huge_refusal(const uffd_features& f) const {
  const std::size_t pmd = os::pmd_size();
  if (core_.ps < pmd || core_.ps % pmd != 0) {
    return "page size " + std::to_string(core_.ps >> 10) + " KiB is not a multiple of the " +
           std::to_string(pmd >> 10) + " KiB huge page: 4 KiB fills";
  }
  if (!f.move) return "this kernel lacks UFFDIO_MOVE (Linux 6.8): 4 KiB fills";
  if (!os::thp_enabled()) {
    return "transparent huge pages are disabled (/sys/kernel/mm/transparent_hugepage/enabled is never): 4 KiB fills";
  }
  return {};
}

// Huge pages where asked for and possible (huge_pool.hpp); else 4 KiB fills, and why.
void pager_impl::choose_huge_pages(const uffd_features& f) {
  if (!core_.huge_asked) return;
  if (std::string why = huge_refusal(f); !why.empty()) {
    core_.huge_why = std::move(why);
  } else if (core_.ro && !f.wp) {
    core_.huge_why = "read-only open: this kernel lacks userfaultfd write-protection (Linux 5.7), which "
                     "keeps the writable region UFFDIO_MOVE needs read-only: 4 KiB fills";
  } else if (core_.ro && core_.thread_fill && !kSigbusTellsWrites) {
    core_.huge_why = "read-only open with faulting-thread fills: this architecture's SIGBUS does not say "
                     "whether the access was a write: 4 KiB fills";
  } else if (huge_mode_ == huge_pages_mode::automatic && !f.pagemap_scan) {
    core_.huge_why = "auto needs PAGEMAP_SCAN (Linux 6.7) to find the pages to promote: 4 KiB fills";
  } else {
    // A read-only region is mapped writable and kept read-only by write-protection
    // (huge_pool.hpp, "Read-only opens").
    core_.huge_on = true;
    core_.huge_fill = huge_mode_ == huge_pages_mode::always;
    core_.promote = huge_mode_ == huge_pages_mode::automatic;
    core_.ro_wp = core_.ro;
  }
}

// The userfaultfd with the features the mode needs, /proc/self/pagemap (wp_async needs it;
// staging and the invariant check use it where PAGEMAP_SCAN works), and the eventfd that wakes
// the fault workers (stop, prefetch).
void pager_impl::open_descriptors(const uffd_features& f) {
  const uffd_open_result r = open_userfaultfd(core_.name);
  core_.uffd = r.fd;
  source_ = r.source;
  std::uint64_t feats = 0;
  if (core_.wp_registered || core_.ro_wp) feats |= UFFD_FEATURE_PAGEFAULT_FLAG_WP;
  if (core_.wp_registered && core_.mode == dirty_tracking::wp_async) feats |= feat_wp_async;
  if (f.move) feats |= feat_move;
  if (f.poison) feats |= feat_poison;
  // The faulting thread's id: the tgkill fallback for read errors (no UFFDIO_POISON), and the
  // read-ahead's streams (read_ahead.hpp: a thread's faults are matched with its own).
  if (!f.poison || (f.kernel & UFFD_FEATURE_THREAD_ID)) feats |= UFFD_FEATURE_THREAD_ID;
  if (core_.thread_fill) feats |= UFFD_FEATURE_SIGBUS;  // missing faults: SIGBUS on the thread
  uffd_api(core_.uffd, feats, core_.name);
  if (core_.mode == dirty_tracking::wp_async || f.pagemap_scan) {
    core_.pagemap_fd = open_pagemap();
    if (core_.pagemap_fd < 0 && core_.mode == dirty_tracking::wp_async) {
      throw_errno(errno, "/proc/self/pagemap", "open");
    }
  }
  core_.wake_fd = os::wake_event_open(core_.name);
}

// The region: page_size aligned, exactly cap_ bytes, registered with the uffd (MISSING, and
// WP when the mode tracks writes with write-protection).
void pager_impl::map_region() {
  // A read-only region may be reserved already (set_geometry: the whole capacity), read-only
  // and without THP advice: huge fills of a read-only region need a writable one (ro_wp).
  if (core_.region_map.p && core_.ro_wp) core_.region_map = anon_map{};
  void* p = core_.region_map.p ? core_.region_map.p
                               : os::reserve_aligned(core_.cap, core_.ps, !core_.ro || core_.ro_wp, core_.huge_fill);
  if (!p && errno == ENOMEM && core_.ro_wp) {
    // A writable private mapping is charged to the commit limit where overcommit is strict
    // (vm.overcommit_memory=2), a read-only one is not: 4 KiB fills of a read-only region.
    core_.huge_on = core_.huge_fill = core_.promote = core_.ro_wp = false;
    core_.huge_why = "read-only open: the kernel refused a writable reservation of " + gib_or_mib(core_.cap) +
                     " (commit limit?), which huge fills need: 4 KiB fills";
    p = os::reserve_aligned(core_.cap, core_.ps, false, false);
  }
  if (!p && errno == ENOMEM) {
    // Almost always an address-space limit: say which one, and what sets the size.
    const std::size_t limit = os::address_space_limit();
    const std::string what =
        core_.cap < core_.store->capacity()
            ? "that is the part of the datastore in use (a read-only open maps no more)"
            : "that is the datastore's capacity, fixed when it was created (options::capacity; "
              "pheap-graph ingest --capacity, default 64 GiB)";
    throw error(errc::io, core_.name, "map pager",
                "cannot reserve " + gib_or_mib(core_.cap) + " of address space for the heap: " + what +
                    (limit ? ", and this process may map at most " + gib_or_mib(limit) +
                                 " (RLIMIT_AS, ulimit -v): raise the limit or use a smaller capacity"
                           : ": the kernel refused it (vm.overcommit_memory, vm.max_map_count?)"),
                ENOMEM);
  }
  if (!p) throw_errno(errno, core_.name, "mmap region");
  core_.base = static_cast<std::byte*>(p);
  core_.region_map.p = core_.base;
  core_.region_map.len = core_.cap;
  const std::uint64_t ioctls = uffd_register(
      core_.uffd, core_.base, core_.cap,
      UFFDIO_REGISTER_MODE_MISSING | (core_.wp_registered || core_.ro_wp ? UFFDIO_REGISTER_MODE_WP : 0),
      core_.name);
  if (!(ioctls & (1ull << _UFFDIO_COPY))) {
    throw error(errc::unavailable, core_.name, "UFFDIO_REGISTER", "UFFDIO_COPY not offered for the region");
  }
  if ((core_.wp_registered || core_.ro_wp) && !(ioctls & (1ull << _UFFDIO_WRITEPROTECT))) {
    throw error(errc::unavailable, core_.name, "UFFDIO_REGISTER", "UFFDIO_WRITEPROTECT not offered");
  }
}

// The region joins the SIGBUS/SIGSEGV registry: a poisoned page becomes an error inside
// guard_faults, a write into a read-only region is named before the process dies.
void pager_impl::register_region() {
  core_.registration = region_registration(core_.base, core_.cap, core_.ps, core_.ro, core_.name);
  if (!core_.thread_fill) return;
  // With UFFD_FEATURE_SIGBUS every missing fault is a SIGBUS: without a slot nothing would
  // fill the region's pages.
  faults_.open_thread_bounce();  // before any fill can run (bounce_pool.hpp)
  auto fill = [](void* me, std::uintptr_t a, bool write) {
    return static_cast<fault_service*>(me)->fill_on_this_thread(a, write);
  };
  if (!core_.registration.set_fill(fill, &faults_)) {
    throw error(errc::unavailable, core_.name, "map pager",
                "fault_fill=faulting_thread: " + std::to_string(kSlots) +
                    " regions are registered already (the SIGBUS handler's slots)");
  }
}

// The zero page (source of zero fills) and, for a writable region, the staging ranges (where
// UFFDIO_MOVE exists) and the bounce buffers of eviction and flush.
void pager_impl::map_buffers(const uffd_features& f) {
  core_.zero = anon_map(faults_.zero_ahead_pages() * core_.ps, true);
  std::memset(core_.zero.data(), 0, faults_.zero_ahead_pages() * core_.ps);  // populate: UFFDIO_COPY reads it
  // The victim cache where a memory cgroup bounds it, or where asked for.
  if (victim_caching_ == victim_caching::on ||
      (victim_caching_ == victim_caching::automatic && follower_ && limit_is_cgroup_)) {
    (void)core_.victims.open(core_.pagemap_fd, core_.ps, core_.npages);
  }
  if (core_.huge_on) core_.huge.open(core_.uffd, core_.pagemap_fd, core_.ps, kHugeKeep, core_.name);
  if (core_.ro) return;  // evicts by dropping (or, huge, by moving into the pool: evictor.cpp)
  evictor_.map_buffers(f.move);
  flusher_.map_buffers(f.move);
  write_behind_.map_buffers();
}

// Threads are named (pheap-fault<i>, pheap-evict) for top, perf and gdb.
void pager_impl::start_threads(unsigned fault_threads) {
  for (std::thread& t : faults_.start(fault_threads)) add_cpu_clock(t, worker_clocks_);
  add_cpu_clock(evictor_.start(), evict_clocks_);
  write_behind_.start();
  promoter_.set_lock(core_.ro ? &refresh_mu_ : &flusher_.lock());
  promoter_.start();
}

// Sets the stop flag and wakes every thread where it may sleep (the uffd poll, the evictor's
// wait, a fault waiting for a slot), then joins them. Also undoes a start_threads() that threw
// half-way.
void pager_impl::stop_threads() noexcept {
  core_.stop.store(true);
  // Each worker passes the wake-up on as it leaves (fault_workers.cpp).
  if (core_.wake_fd >= 0) core_.wake_workers();
  core_.budget.wake_all();
  // Write-behind and the promoter first: a claim may wait for a page's fill, which the
  // workers finish.
  promoter_.join();
  write_behind_.join();
  faults_.join();
  evictor_.join();
  worker_clocks_.clear();
  evict_clocks_.clear();
}

void pager_impl::close_descriptors() noexcept {
  for (int* fd : {&core_.uffd, &core_.pagemap_fd, &core_.wake_fd}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

pager_impl::~pager_impl() {
  core_.registration.release();
  if (debug_) {  // before the threads stop: their CPU clocks go with them
    std::ostringstream line;
    line << stats();
    std::fprintf(stderr, "pheap: pager %s: at close: %s\n", core_.name.c_str(), line.str().c_str());
  }
  stop_threads();
#ifndef NDEBUG
  {
    const std::string bad = check_invariants();
    if (!bad.empty()) {
      std::fprintf(stderr, "pheap: pager %s: page table invariant violated: %s\n", core_.name.c_str(),
                   bad.c_str());
      assert(bad.empty());
    }
  }
#endif
  uffd_unregister(core_.uffd, core_.base, core_.cap);
  evictor_.close();
  flusher_.close();
  close_descriptors();
  // region_map_ and the other anon_maps unmap themselves.
}

std::pair<std::size_t, std::size_t> pager_impl::pages_covering(std::size_t offset,
                                                                std::size_t len,
                                                                const char* op) const {
  if (offset >= core_.cap || len > core_.cap - offset) {
    throw error(errc::invalid_argument, core_.name, op, "range outside the region");
  }
  return {offset / core_.ps, (offset + len - 1) / core_.ps};
}

void pager_impl::pin(std::size_t offset, std::size_t len) {
  if (len == 0) return;
  const auto [first, last] = pages_covering(offset, len, "pin");
  for (std::size_t p = first; p <= last; ++p) {
    std::uint32_t was = 0;
    if (!core_.table.add_pin(p, was)) throw error(errc::invalid_argument, core_.name, "pin", "pin count overflow");
    if (ps::pins(was) == 0) core_.budget.page_pinned();
  }
  // Fault the pages in from this thread (a user-mode read): once resident with a pin count
  // they cannot be claimed by the evictor (I4). A poisoned page raises SIGBUS here.
  for (std::size_t p = first; p <= last; ++p) {
    volatile const std::byte* b = core_.page_addr(p);
    (void)*b;
  }
}

void pager_impl::unpin(std::size_t offset, std::size_t len) {
  if (len == 0) return;
  const auto [first, last] = pages_covering(offset, len, "unpin");
  for (std::size_t p = first; p <= last; ++p) {
    std::uint32_t was = 0;
    if (!core_.table.drop_pin(p, was)) throw error(errc::invalid_argument, core_.name, "unpin", "page not pinned");
    if (ps::pins(was) == 1) core_.budget.page_unpinned();
  }
  core_.budget.check_pressure();
}

void pager_impl::add_cpu_clock(std::thread& t, std::vector<clockid_t>& to) {
  clockid_t c{};
  if (::pthread_getcpuclockid(t.native_handle(), &c) == 0) to.push_back(c);
}

std::uint64_t pager_impl::cpu_ns(const std::vector<clockid_t>& clocks) {
  std::uint64_t sum = 0;
  for (const clockid_t c : clocks) {
    timespec ts{};
    if (::clock_gettime(c, &ts) == 0) {
      sum += static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
    }
  }
  return sum;
}

void pager_impl::wait_evictor_idle() {
  for (;;) {
    // Read steps first: one that waits for room (read-ahead, prefetch) has the evictor run again.
    if (faults_.read_steps_idle()) {
      const auto b = evictor_.hold_between_batches();
      if (core_.budget.evictor_idle() && faults_.read_steps_idle()) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

std::uint64_t pager_impl::huge_mapped_bytes() const {
  if (!core_.huge_on || core_.pagemap_fd < 0) return 0;
  const long long huge = pagemap_bytes(core_.pagemap_fd, core_.base, core_.base + core_.cap, page_is_huge | page_is_present);
  return huge < 0 ? 0 : static_cast<std::uint64_t>(huge);
}

pager_stats pager_impl::stats() const {
  pager_stats s;
  auto g = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  s.read_faults = g(core_.c.read_faults);
  s.write_faults = g(core_.c.write_faults);
  s.wp_faults = g(core_.c.wp_faults);
  s.zero_fills = g(core_.c.zero_fills);
  s.pages_read = g(core_.c.pages_read);
  s.bytes_read = s.pages_read * core_.ps;
  s.read_ahead_pages = g(core_.c.read_ahead_pages);
  {
    const read_ahead::counts ra = faults_.read_ahead_totals();
    s.read_ahead_windows = ra.windows;
    s.read_ahead_planned = ra.planned;
    s.read_ahead_passed = ra.passed;
    s.read_ahead_gated = ra.gated;
  }
  s.prefetch_dropped = g(core_.c.prefetch_dropped);
  s.read_steps = g(core_.c.read_steps);
  s.read_step_pages = g(core_.c.read_step_pages);
  s.zero_ahead_pages = g(core_.c.zero_ahead_pages);
  s.prefetched_pages = g(core_.c.prefetched_pages);
  s.evictions = g(core_.c.evictions);
  s.evicted_dirty = g(core_.c.evicted_dirty);
  s.evict_runs = g(core_.c.evict_runs);
  s.evict_verify_reads = g(core_.c.evict_verify_reads);
  s.released_pages_dropped = g(core_.c.released_pages_dropped);
  s.write_behind = write_behind_.on();
  s.write_behind_pages = g(core_.c.write_behind_pages);
  s.write_behind_rounds = g(core_.c.write_behind_rounds);
  s.write_behind_ns = g(core_.c.write_behind_ns);
  s.victims_kept = g(core_.c.victims_kept);
  s.evict_waits = g(core_.c.evict_waits);
  s.victim_hits = g(core_.c.victim_hits);
  s.write_back_hits = g(core_.c.write_back_hits);
  s.thread_fills = g(core_.c.thread_fills);
  s.thread_fill_retries = g(core_.c.thread_fill_retries);
  s.thread_fill = core_.thread_fill;
  s.victim_cache = core_.victims.is_open();
  s.huge_pages = core_.huge_on;
  s.huge_pages_why = core_.huge_why;
  s.huge_fills = g(core_.c.huge_fills);
  s.huge_fallback_fills = g(core_.c.huge_fallback_fills);
  s.huge_fallback_no_block = g(core_.c.huge_fallback_no_block);
  s.huge_fallback_move = g(core_.c.huge_fallback_move);
  s.huge_fallback_move_errno = static_cast<int>(g(core_.c.huge_fallback_move_errno));
  s.huge_fallback_split = g(core_.c.huge_fallback_split);
  s.huge_mapped_bytes = huge_mapped_bytes();
  s.huge_evictions = g(core_.c.huge_evictions);
  s.huge_recycled = g(core_.c.huge_recycled);
  s.huge_evicted_split = g(core_.c.huge_evicted_split);
  s.huge_fresh = core_.huge.fresh();
  s.huge_promotions = g(core_.c.huge_promotions);
  s.huge_promote_failed = g(core_.c.huge_promote_failed);
  s.huge_promote_ns = g(core_.c.huge_promote_ns);
  s.huge_promote_rounds = g(core_.c.huge_promote_rounds);
  s.huge_pool_blocks = core_.huge.is_open() ? core_.huge.full_blocks() : 0;
  s.dirty_pages_written = g(core_.c.dirty_pages_written);
  s.bytes_written = g(core_.c.bytes_written);
  s.flushes = g(core_.c.flushes);
  s.flush_retakes = g(core_.c.flush_retakes);
  s.flush_write_back_waits = g(core_.c.flush_write_back_waits);
  s.buffer_waits = core_.budget.waits();
  s.poisoned_pages = g(core_.c.poisoned_pages);
  s.refreshes = g(core_.c.refreshes);
  s.invalidated_pages = g(core_.c.invalidated_pages);
  s.unpoisoned_pages = g(core_.c.unpoisoned_pages);
  s.resident_pages = static_cast<std::uint64_t>(std::max<std::int64_t>(0, core_.budget.occupied()));
  s.peak_resident_pages = core_.budget.peak();
  s.pinned_pages = static_cast<std::uint64_t>(std::max<std::int64_t>(0, core_.budget.pinned()));
  s.fault_ns = g(core_.c.fault_ns);
  s.flush_ns = g(core_.c.flush_ns);
  s.evict_ns = g(core_.c.evict_ns);
  s.fault_cpu_ns = cpu_ns(worker_clocks_);
  s.evict_cpu_ns = cpu_ns(evict_clocks_);
  s.buffer_bytes = std::uint64_t(core_.budget.pages()) * core_.ps;
  s.buffer_source = buffer_source_;
  s.buffer_target_bytes = std::uint64_t(core_.budget.target_pages()) * core_.ps;
  s.buffer_lowest_target_bytes = std::uint64_t(core_.budget.lowest_target()) * core_.ps;
  s.buffer_resamples = core_.budget.resamples();
  s.buffer_target_source = core_.budget.follows() ? follower_->describe() : "fixed at open";
  return s;
}

}  // namespace paging

// ---- public facade ----------------------------------------------------------------------------
pager::pager(std::unique_ptr<sparse_store> store, const pager_options& opt)
    : impl_(std::make_unique<paging::pager_impl>(std::move(store), opt)) {}
pager::~pager() = default;
std::byte* pager::base() const noexcept { return impl_->base(); }
std::size_t pager::size() const noexcept { return impl_->size(); }
std::size_t pager::page_size() const noexcept { return impl_->page_size(); }
bool pager::read_only() const noexcept { return impl_->read_only(); }
dirty_tracking pager::tracking() const noexcept { return impl_->tracking(); }
std::size_t pager::buffer_pages() const noexcept { return impl_->buffer_pages(); }
std::uint64_t pager::flush(std::span<const std::byte> root) { return impl_->flush(root); }
std::uint64_t pager::flush_if_changed(std::span<const std::byte> root) {
  return impl_->flush_if_changed(root);
}
std::uint64_t pager::prepare(std::span<const std::byte> root) { return impl_->prepare(root); }
std::uint64_t pager::confirm() { return impl_->confirm(); }
void pager::prefetch(std::span<const std::pair<std::size_t, std::size_t>> ranges) {
  impl_->prefetch(ranges);
}

void pager::prefetch_stored(std::span<const std::pair<std::size_t, std::size_t>> ranges) {
  impl_->prefetch_stored(ranges);
}
void pager::discard(std::size_t first_page, std::size_t count) { impl_->discard(first_page, count); }
void pager::pin(std::size_t offset, std::size_t len) { impl_->pin(offset, len); }
void pager::unpin(std::size_t offset, std::size_t len) { impl_->unpin(offset, len); }
pager_stats pager::stats() const { return impl_->stats(); }
refresh_result pager::refresh() { return impl_->refresh(std::nullopt); }
refresh_result pager::refresh_to(std::uint64_t max_epoch) { return impl_->refresh(max_epoch); }
void pager::invalidate(std::span<const std::pair<std::uint64_t, std::uint64_t>> pages) {
  impl_->invalidate(pages);
}
sparse_store& pager::store() noexcept { return impl_->store(); }

}  // namespace pheap
