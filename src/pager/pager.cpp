// pheap::pager: construction (feature choice, mapping, registration), teardown, hints,
// options and statistics. See include/pheap/pager.hpp for the contract and
// src/pager/pager_impl.hpp for the internal structure.
#include "pheap/pager.hpp"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <cassert>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ostream>
#include <sstream>

#include "pheap/env.hpp"
#include "pager/pager_impl.hpp"
#include "pheap/error.hpp"

namespace pheap {

const char* to_string(dirty_tracking t) noexcept {
  switch (t) {
    case dirty_tracking::automatic: return "automatic";
    case dirty_tracking::wp_async: return "wp_async";
    case dirty_tracking::wp_sync: return "wp_sync";
    case dirty_tracking::all_resident: return "all_resident";
  }
  return "?";
}

std::ostream& operator<<(std::ostream& os, dirty_tracking t) { return os << to_string(t); }

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
  if (o.read_ahead > 1024) bad("read_ahead must be at most 1024 pages");
}
}  // namespace

pager_options pager_options::from_env() { return from_env(pager_options{}); }

// Each variable is parsed and range-checked by the table (pheap/env.hpp); what is left here
// is where the values go and the one relation between two of them.
pager_options pager_options::from_env(pager_options base) {
  using env::var;
  if (auto v = env::size(var::buffer_size)) base.buffer_size = *v;
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
  if (auto w = env::word(var::dirty_tracking)) {
    for (dirty_tracking t : {dirty_tracking::automatic, dirty_tracking::wp_async,
                             dirty_tracking::wp_sync, dirty_tracking::all_resident}) {
      if (*w == to_string(t)) base.tracking = t;
    }
  }
  if (auto v = env::count(var::fault_threads)) base.fault_threads = *v;
  if (auto v = env::count(var::read_ahead)) base.read_ahead = *v;
  return base;
}

std::ostream& operator<<(std::ostream& os, const pager_stats& s) {
  os << "faults: read " << s.read_faults << " write " << s.write_faults << " wp " << s.wp_faults
     << " | fills: zero " << s.zero_fills << " store " << s.pages_read << " (" << s.bytes_read
     << " B) read-ahead " << s.read_ahead_pages << " prefetch " << s.prefetched_pages
     << " | evictions " << s.evictions << " (dirty " << s.evicted_dirty << ", verified "
     << s.evict_verify_reads << ") | flushes " << s.flushes << " pages " << s.dirty_pages_written
     << " retakes " << s.flush_retakes << " | written " << s.bytes_written << " B"
     << " | resident " << s.resident_pages << " peak " << s.peak_resident_pages << " pinned "
     << s.pinned_pages << " | buffer waits " << s.buffer_waits << " poisoned " << s.poisoned_pages
     << " | time: fault " << s.fault_ns / 1000 << " us flush " << s.flush_ns / 1000
     << " us evict " << s.evict_ns / 1000 << " us";
  return os;
}

namespace paging {

anon_map::anon_map(std::size_t bytes, bool dontfork) : len(bytes) {
  p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
             -1, 0);
  if (p == MAP_FAILED) {
    p = nullptr;
    throw_errno(errno, "", "mmap pager buffer");
  }
  if (dontfork) (void)::madvise(p, bytes, MADV_DONTFORK);
  (void)::madvise(p, bytes, MADV_NOHUGEPAGE);
}

anon_map::~anon_map() {
  if (p) ::munmap(p, len);
}

anon_map& anon_map::operator=(anon_map&& o) noexcept {
  if (this != &o) {
    if (p) ::munmap(p, len);
    p = o.p;
    len = o.len;
    o.p = nullptr;
    o.len = 0;
  }
  return *this;
}

namespace {
std::size_t default_buffer() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long psz = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || psz <= 0) return std::size_t(1) << 30;
  return static_cast<std::size_t>(pages) * static_cast<std::size_t>(psz) / 4;
}
}  // namespace

pager_impl::pager_impl(std::unique_ptr<sparse_store> store, const pager_options& opt)
    : store_(std::move(store)), table_(0) {
  if (!store_) throw error(errc::invalid_argument, "", "map pager", "null store");
  name_ = store_->path();
  validate(opt, name_);
  ps_ = store_->page_size();
  cap_ = store_->capacity();
  ro_ = store_->read_only();
  read_ahead_ = opt.read_ahead;
  if (ps_ < os_page_size() || (ps_ & (ps_ - 1)) != 0 || cap_ == 0 || cap_ % ps_ != 0) {
    throw error(errc::invalid_argument, name_, "map pager",
                "page size must be a power of two ≥ the system page size and divide the capacity");
  }
  npages_ = cap_ / ps_;
  table_ = page_table(npages_);


  // ---- buffer geometry ---------------------------------------------------------------------
  std::size_t buf = opt.buffer_size ? opt.buffer_size : default_buffer();
  buffer_pages_ = std::clamp<std::size_t>(buf / ps_, 2, npages_);
  if (npages_ < 2) buffer_pages_ = npages_;
  high_pages_ = std::clamp<std::size_t>(
      static_cast<std::size_t>(std::ceil(opt.high_watermark * static_cast<double>(buffer_pages_))),
      1, buffer_pages_);
  low_pages_ = std::min<std::size_t>(
      static_cast<std::size_t>(opt.low_watermark * static_cast<double>(buffer_pages_)),
      high_pages_ - 1);
  // Read-only regions evict with MADV_DONTNEED (nothing can be written), so only writable
  // bounded regions need UFFDIO_MOVE.
  const bool bounded = buffer_pages_ < npages_ && !ro_;

  // ---- features and tracking mode ------------------------------------------------------------
  const uffd_features& f = probe_features(name_);
  have_move_ = f.move;
  have_poison_ = f.poison;
  const bool can_async = f.wp && f.wp_async && f.pagemap_scan && f.move;
  const bool can_sync = f.wp && (f.move || !bounded);
  const bool can_all = f.move || !bounded;
  auto missing = [&](const char* mode, const char* need) {
    throw error(errc::unavailable, name_, std::string("map pager (dirty tracking ") + mode + ")",
                std::string("this kernel lacks ") + need);
  };
  switch (opt.tracking) {
    case dirty_tracking::automatic:
      if (can_async) mode_ = dirty_tracking::wp_async;
      else if (can_sync) mode_ = dirty_tracking::wp_sync;
      else if (can_all) mode_ = dirty_tracking::all_resident;
      else missing("automatic", "UFFDIO_MOVE (Linux 6.8) and write-protect faults (5.7), so "
                   "only a buffer holding the whole region is possible");
      break;
    case dirty_tracking::wp_async:
      if (!can_async) {
        missing("wp_async", "UFFD_FEATURE_WP_ASYNC + PAGEMAP_SCAN (Linux 6.7) or UFFDIO_MOVE (6.8)");
      }
      mode_ = dirty_tracking::wp_async;
      break;
    case dirty_tracking::wp_sync:
      if (!can_sync) missing("wp_sync", f.wp ? "UFFDIO_MOVE (Linux 6.8), needed for a bounded buffer"
                                             : "userfaultfd write-protect (Linux 5.7)");
      mode_ = dirty_tracking::wp_sync;
      break;
    case dirty_tracking::all_resident:
      if (!can_all) missing("all_resident", "UFFDIO_MOVE (Linux 6.8), needed for a bounded buffer");
      mode_ = dirty_tracking::all_resident;
      break;
  }
  wp_registered_ = !ro_ && (mode_ == dirty_tracking::wp_async || mode_ == dirty_tracking::wp_sync);

  // ---- descriptors ---------------------------------------------------------------------------
  auto cleanup = [&] {
    if (uffd_ >= 0) ::close(uffd_);
    if (pagemap_fd_ >= 0) ::close(pagemap_fd_);
    if (stop_fd_ >= 0) ::close(stop_fd_);
    if (prefetch_fd_ >= 0) ::close(prefetch_fd_);
    uffd_ = pagemap_fd_ = stop_fd_ = prefetch_fd_ = -1;
  };
  try {
    const uffd_open_result r = open_userfaultfd(name_);
    uffd_ = r.fd;
    source_ = r.source;
    std::uint64_t feats = 0;
    if (wp_registered_) feats |= UFFD_FEATURE_PAGEFAULT_FLAG_WP;
    if (wp_registered_ && mode_ == dirty_tracking::wp_async) feats |= feat_wp_async;
    if (f.move) feats |= feat_move;
    if (f.poison) feats |= feat_poison;
    else feats |= UFFD_FEATURE_THREAD_ID;  // tgkill fallback for read errors
    uffd_api(uffd_, feats, name_);

    // ---- the region, page_size aligned, exactly cap_ bytes -------------------------------------
    const int prot = ro_ ? PROT_READ : (PROT_READ | PROT_WRITE);
    void* raw = ::mmap(nullptr, cap_ + ps_, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) throw_errno(errno, name_, "mmap region");
    const auto a = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t aligned = (a + ps_ - 1) & ~(std::uintptr_t(ps_) - 1);
    if (aligned > a) ::munmap(raw, aligned - a);
    const std::uintptr_t tail = aligned + cap_;
    if (a + cap_ + ps_ > tail) ::munmap(reinterpret_cast<void*>(tail), a + cap_ + ps_ - tail);
    base_ = reinterpret_cast<std::byte*>(aligned);
    region_map_.p = base_;
    region_map_.len = cap_;
    (void)::madvise(base_, cap_, MADV_DONTFORK);
    (void)::madvise(base_, cap_, MADV_NOHUGEPAGE);
    const std::uint64_t ioctls = uffd_register(
        uffd_, base_, cap_,
        UFFDIO_REGISTER_MODE_MISSING | (wp_registered_ ? UFFDIO_REGISTER_MODE_WP : 0), name_);
    if (!(ioctls & (1ull << _UFFDIO_COPY))) {
      throw error(errc::unavailable, name_, "UFFDIO_REGISTER", "UFFDIO_COPY not offered for the region");
    }
    if (wp_registered_ && !(ioctls & (1ull << _UFFDIO_WRITEPROTECT))) {
      throw error(errc::unavailable, name_, "UFFDIO_REGISTER", "UFFDIO_WRITEPROTECT not offered");
    }

    zero_ = anon_map(ps_, true);
    std::memset(zero_.data(), 0, ps_);  // populate: UFFDIO_COPY reads it
    // Batches: ~8 MiB (evict) / ~16 MiB (flush) per batch, at least one page.
    evict_batch_pages_ = std::clamp<std::size_t>((std::size_t(8) << 20) / ps_, 1, 512);
    evict_batch_pages_ = std::min(evict_batch_pages_, std::max<std::size_t>(1, buffer_pages_ / 2));
    flush_batch_pages_ = std::clamp<std::size_t>((std::size_t(16) << 20) / ps_, 1, 1024);
    if (!ro_) {
      if (f.move) {
        evict_staging_ = anon_map(evict_batch_pages_ * ps_, true);
        flush_staging_ = anon_map(flush_batch_pages_ * ps_, true);
        uffd_register(uffd_, evict_staging_.p, evict_staging_.len, UFFDIO_REGISTER_MODE_MISSING, name_);
        uffd_register(uffd_, flush_staging_.p, flush_staging_.len, UFFDIO_REGISTER_MODE_MISSING, name_);
      }
      evict_bounce_ = anon_map(evict_batch_pages_ * ps_, true);
      verify_bounce_ = anon_map(evict_batch_pages_ * ps_, true);
      flush_bounce_ = anon_map(flush_batch_pages_ * ps_, true);
    }
    if (mode_ == dirty_tracking::wp_async || f.pagemap_scan) {
      pagemap_fd_ = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
      if (pagemap_fd_ < 0 && mode_ == dirty_tracking::wp_async) {
        throw_errno(errno, "/proc/self/pagemap", "open");
      }
    }
    stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    prefetch_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (stop_fd_ < 0 || prefetch_fd_ < 0) throw_errno(errno, name_, "eventfd");

    for (unsigned i = 0; i < opt.fault_threads; ++i) {
      workers_.emplace_back([this, i] { worker_main(i); });
    }
    evictor_ = std::thread([this] { evictor_main(); });
  } catch (...) {
    stop_.store(true);
    if (stop_fd_ >= 0) {
      const std::uint64_t one = 1;
      (void)!::write(stop_fd_, &one, sizeof one);
    }
    for (auto& t : workers_) t.join();
    workers_.clear();
    cleanup();
    throw;
  }
}

pager_impl::~pager_impl() {
  stop_.store(true, std::memory_order_release);
  const std::uint64_t one = 1;
  (void)!::write(stop_fd_, &one, sizeof one);
  kick_evictor();
  {
    std::lock_guard lk(free_mu_);
    free_cv_.notify_all();
  }
  for (auto& t : workers_) t.join();
  if (evictor_.joinable()) evictor_.join();
#ifndef NDEBUG
  {
    const std::string bad = check_invariants();
    if (!bad.empty()) {
      std::fprintf(stderr, "pheap: pager %s: page table invariant violated: %s\n", name_.c_str(),
                   bad.c_str());
      assert(bad.empty());
    }
  }
#endif
  uffd_unregister(uffd_, base_, cap_);
  if (evict_staging_.p) uffd_unregister(uffd_, evict_staging_.p, evict_staging_.len);
  if (flush_staging_.p) uffd_unregister(uffd_, flush_staging_.p, flush_staging_.len);
  ::close(uffd_);
  if (pagemap_fd_ >= 0) ::close(pagemap_fd_);
  ::close(stop_fd_);
  ::close(prefetch_fd_);
  // region_map_ and the other anon_maps unmap themselves.
}

std::string pager_impl::check_invariants() const {
  // A fill's UFFDIO_COPY wakes the faulting thread before its worker records the page
  // resident, so the application can return from its last access while a worker still holds
  // `filling` for a moment. Quiescence includes those fills finishing: wait for them (bounded;
  // a fill still pending after that is reported below as the bug it then is).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (std::size_t p = 0; p < npages_;) {
    if (ps::kind(table_.load(p)) != ps::filling || std::chrono::steady_clock::now() > deadline) {
      ++p;
      continue;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::int64_t occupied = 0, pinned = 0;
  std::vector<std::uint8_t> present(npages_, 0);
  bool have_present = false;
  if (pagemap_fd_ >= 0) {
    page_region regs[256];
    std::byte* a = base_;
    std::byte* const e = base_ + cap_;
    have_present = true;
    while (a < e) {
      std::uint64_t we = 0;
      const long r = pagemap_scan(pagemap_fd_, a, e, 0, page_is_present, 0, regs, 256, &we);
      if (r < 0) {
        have_present = false;
        break;
      }
      for (long k = 0; k < r; ++k) {
        for (std::uint64_t x = regs[k].start; x < regs[k].end; x += os_page_size()) {
          present[(x - reinterpret_cast<std::uintptr_t>(base_)) / ps_] = 1;
        }
      }
      if (we <= reinterpret_cast<std::uint64_t>(a)) break;
      a = reinterpret_cast<std::byte*>(we);
    }
  }
  for (std::size_t p = 0; p < npages_; ++p) {
    const std::uint32_t s = table_.load(p);
    const std::uint32_t k = ps::kind(s);
    auto bad = [&](const char* what) {
      char b[160];
      std::snprintf(b, sizeof b, "page %zu state 0x%x: %s", p, s, what);
      return std::string(b);
    };
    if (k == ps::filling) return bad("filling while quiescent");
    if (s & (ps::owned | ps::wanted)) return bad("owned/wanted while quiescent (I2)");
    if (k != ps::resident && (s & ps::dirty)) return bad("dirty but not resident");
    if (k == ps::resident) ++occupied;
    if (ps::pins(s) > 0) ++pinned;
    if (have_present) {
      // ZEROPAGE-filled read-only pages are present too (zero-page ptes).
      if (k == ps::resident && !present[p]) return bad("resident but not mapped (I1)");
      if (k == ps::absent && present[p]) return bad("absent but mapped (I1)");
    }
  }
  if (occupied != occupied_.load()) {
    return "occupied counter " + std::to_string(occupied_.load()) + " != resident pages " +
           std::to_string(occupied) + " (I6)";
  }
  if (pinned != pinned_.load()) {
    return "pinned counter " + std::to_string(pinned_.load()) + " != pinned pages " +
           std::to_string(pinned);
  }
  return {};
}

void pager_impl::prefetch(std::span<const std::pair<std::size_t, std::size_t>> ranges) {
  {
    std::lock_guard lk(pf_mu_);
    for (const auto& [off, len] : ranges) {
      if (len == 0 || off >= cap_) continue;
      const std::size_t end = std::min(cap_, off + std::min(len, cap_ - off));
      pf_q_.emplace_back(off / ps_, (end + ps_ - 1) / ps_);
    }
  }
  const std::uint64_t one = 1;
  (void)!::write(prefetch_fd_, &one, sizeof one);
}

void pager_impl::pin(std::size_t offset, std::size_t len) {
  if (len == 0) return;
  if (offset >= cap_ || len > cap_ - offset) {
    throw error(errc::invalid_argument, name_, "pin", "range outside the region");
  }
  const std::size_t first = offset / ps_, last = (offset + len - 1) / ps_;
  for (std::size_t p = first; p <= last; ++p) {
    std::uint32_t s = table_.load(p);
    for (;;) {
      if (ps::pins(s) == 0xFFFF) throw error(errc::invalid_argument, name_, "pin", "pin count overflow");
      if (table_.cas(p, s, s + ps::pin_one)) break;
    }
    if (ps::pins(s) == 0) pinned_.fetch_add(1);
  }
  // Fault the pages in from this thread (a user-mode read): once resident with a pin count
  // they cannot be claimed by the evictor (I4). A poisoned page raises SIGBUS here.
  for (std::size_t p = first; p <= last; ++p) {
    volatile const std::byte* b = page_addr(p);
    (void)*b;
  }
}

void pager_impl::unpin(std::size_t offset, std::size_t len) {
  if (len == 0) return;
  if (offset >= cap_ || len > cap_ - offset) {
    throw error(errc::invalid_argument, name_, "unpin", "range outside the region");
  }
  const std::size_t first = offset / ps_, last = (offset + len - 1) / ps_;
  for (std::size_t p = first; p <= last; ++p) {
    std::uint32_t s = table_.load(p);
    for (;;) {
      if (ps::pins(s) == 0) throw error(errc::invalid_argument, name_, "unpin", "page not pinned");
      if (table_.cas(p, s, s - ps::pin_one)) break;
    }
    if (ps::pins(s) == 1) pinned_.fetch_sub(1);
  }
  if (budget_used() >= static_cast<std::int64_t>(high_pages_) && buffer_pages_ < npages_) kick_evictor();
}

pager_stats pager_impl::stats() const {
  pager_stats s;
  auto g = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  s.read_faults = g(c_.read_faults);
  s.write_faults = g(c_.write_faults);
  s.wp_faults = g(c_.wp_faults);
  s.zero_fills = g(c_.zero_fills);
  s.pages_read = g(c_.pages_read);
  s.bytes_read = s.pages_read * ps_;
  s.read_ahead_pages = g(c_.read_ahead_pages);
  s.prefetched_pages = g(c_.prefetched_pages);
  s.evictions = g(c_.evictions);
  s.evicted_dirty = g(c_.evicted_dirty);
  s.evict_verify_reads = g(c_.evict_verify_reads);
  s.dirty_pages_written = g(c_.dirty_pages_written);
  s.bytes_written = g(c_.bytes_written);
  s.flushes = g(c_.flushes);
  s.flush_retakes = g(c_.flush_retakes);
  s.buffer_waits = g(c_.buffer_waits);
  s.poisoned_pages = g(c_.poisoned_pages);
  s.resident_pages = static_cast<std::uint64_t>(std::max<std::int64_t>(0, occupied_.load()));
  s.peak_resident_pages = g(c_.peak_resident);
  s.pinned_pages = static_cast<std::uint64_t>(std::max<std::int64_t>(0, pinned_.load()));
  s.fault_ns = g(c_.fault_ns);
  s.flush_ns = g(c_.flush_ns);
  s.evict_ns = g(c_.evict_ns);
  return s;
}

}  // namespace paging

// ---- public facade ----------------------------------------------------------------------------
pager::pager(std::unique_ptr<sparse_store> store, const pager_options& opt)
    : impl_(std::make_unique<paging::pager_impl>(std::move(store), opt)) {}
pager::~pager() = default;
std::byte* pager::base() const noexcept { return impl_->base_; }
std::size_t pager::size() const noexcept { return impl_->cap_; }
std::size_t pager::page_size() const noexcept { return impl_->ps_; }
bool pager::read_only() const noexcept { return impl_->ro_; }
dirty_tracking pager::tracking() const noexcept { return impl_->mode_; }
std::size_t pager::buffer_pages() const noexcept { return impl_->buffer_pages_; }
std::uint64_t pager::flush(std::span<const std::byte> root) { return impl_->flush(root); }
void pager::prefetch(std::span<const std::pair<std::size_t, std::size_t>> ranges) {
  impl_->prefetch(ranges);
}
void pager::pin(std::size_t offset, std::size_t len) { impl_->pin(offset, len); }
void pager::unpin(std::size_t offset, std::size_t len) { impl_->unpin(offset, len); }
pager_stats pager::stats() const { return impl_->stats(); }
sparse_store& pager::store() noexcept { return *impl_->store_; }

}  // namespace pheap
