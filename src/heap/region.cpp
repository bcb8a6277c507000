// src/heap/region.cpp — the pager-backed region (backend_kind::uffd) and backend selection.
#include "heap/region.hpp"

#include <string>

#include "pheap/env.hpp"
#include "pheap/error.hpp"

namespace pheap {

// The enums' spellings are the PHEAP_* table's (env.cpp), in enum order.
const char* to_string(backend_kind b) noexcept {
  return env::name_of_choice(env::var::backend, static_cast<unsigned>(b));
}

const char* to_string(mmap_advice_kind a) noexcept {
  return env::name_of_choice(env::var::mmap_advice, static_cast<unsigned>(a));
}

options options::from_env() { return from_env(options{}); }

// Each variable is parsed and range-checked by the table (pheap/env.hpp); here is only where
// its value goes.
options options::from_env(options base) {
  using env::var;
  if (auto v = env::size(var::page_size)) base.page_size = static_cast<std::uint32_t>(*v);
  if (auto i = env::choice(var::backend)) base.backend = static_cast<backend_kind>(*i);
  if (auto i = env::choice(var::mmap_advice)) base.mmap_advice = static_cast<mmap_advice_kind>(*i);
  if (auto i = env::choice(var::read_only_cache)) base.read_only_cache = *i == 0;  // on | off
  if (auto v = env::size(var::pin_limit)) base.pin_limit = *v;
  base.pager = pager_options::from_env(base.pager);
  return base;
}

namespace heap {

namespace {
[[noreturn]] void no_two_phase(region& r, const char* op) {
  throw error(errc::unavailable, r.store().path(), op,
              std::string("two-phase commit needs the uffd backend, not ") + to_string(r.backend()));
}
}  // namespace

refresh_result region::refresh_to(std::uint64_t) { return refresh(); }

refresh_result region::refresh() {
  throw error(errc::unavailable, store().path(), "refresh",
              std::string("the ") + to_string(backend()) +
                  " backend reads a datastore no writer holds (flock LOCK_SH): reopen it to see a newer "
                  "watermark");
}

std::uint64_t region::prepare(std::span<const std::byte>) { no_two_phase(*this, "prepare"); }
std::uint64_t region::confirm() { no_two_phase(*this, "confirm"); }

namespace {

class pager_region final : public region {
 public:
  pager_region(std::unique_ptr<sparse_store> store, const pager_options& opt)
      : pg_(std::move(store), opt) {}

  std::byte* base() const noexcept override { return pg_.base(); }
  std::size_t size() const noexcept override { return pg_.size(); }
  std::size_t page_size() const noexcept override { return pg_.page_size(); }
  bool read_only() const noexcept override { return pg_.read_only(); }
  backend_kind backend() const noexcept override { return backend_kind::uffd; }
  std::uint64_t flush(std::span<const std::byte> root) override { return pg_.flush(root); }
  // Nothing dirty and the same root: nothing is written (the datastore ends at the last flush).
  std::uint64_t close(std::span<const std::byte> root) override { return pg_.flush_if_changed(root); }
  std::uint64_t prepare(std::span<const std::byte> root) override { return pg_.prepare(root); }
  std::uint64_t confirm() override { return pg_.confirm(); }
  void discard(std::uint64_t off, std::uint64_t len) override {
    // Released chunk ranges become holes: the store zeroes them as of the next commit and
    // punches the disk space at checkpoint, and the pager drops their resident pages unwritten
    // (pager::discard; as the mmap backend's MADV_REMOVE). Safe against the pager's copies of
    // those pages: the journal orders a discard before any later write_pages() of the same
    // page (the chunk can only be reused, and so rewritten, after this returns), and a stale
    // copy written back later (one a flush or an eviction held) only costs space.
    const std::uint64_t ps = pg_.page_size();
    const std::uint64_t first = (off + ps - 1) / ps, end = (off + len) / ps;
    if (end <= first) return;
    pg_.discard(first, end - first);
  }
  void snapshot(const std::string& dst, std::span<const std::byte>) override {
    pg_.store().snapshot(dst);  // the last commit; the manager flushed just before
  }
  void prefetch(std::span<const std::pair<std::size_t, std::size_t>> ranges) override {
    pg_.prefetch(ranges);
  }
  void prefetch_stored(std::span<const std::pair<std::size_t, std::size_t>> ranges) override {
    pg_.prefetch_stored(ranges);
  }
  refresh_result refresh() override { return pg_.refresh(); }
  refresh_result refresh_to(std::uint64_t max_epoch) override { return pg_.refresh_to(max_epoch); }
  sparse_store& store() noexcept override { return pg_.store(); }
  dirty_tracking tracking() const noexcept override { return pg_.tracking(); }
  pager_stats stats() const override { return pg_.stats(); }

 private:
  mutable pager pg_;
};

}  // namespace

std::unique_ptr<region> make_pager_region(std::unique_ptr<sparse_store> store, const pager_options& opt) {
  return std::make_unique<pager_region>(std::move(store), opt);
}

}  // namespace heap
}  // namespace pheap
