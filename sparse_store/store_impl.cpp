// sparse_store/store_impl.cpp — construction, accessors, statistics and the failure rules
// (FORMAT.md "Failure rules"): the first failed write or sync poisons the store; reads keep
// working; every later mutation throws errc::poisoned naming the first cause.
#include "store_impl.hpp"

#include "pheap/error.hpp"
#include "commit_state.hpp"
#include "layout.hpp"

namespace pheap::store {

store_impl::store_impl(std::shared_ptr<io::engine> eng, std::string dir, bool read_only,
                       std::unique_ptr<io::file> lock, std::unique_ptr<io::file> super,
                       std::shared_ptr<io::file> map_file, chosen_slot sb,
                       std::vector<dir_entry> directory)
    : eng_(std::move(eng)),
      dir_(std::move(dir)),
      read_only_(read_only),
      lock_(std::move(lock)),
      super_(std::move(super)),
      id_(sb.sb.id),
      page_size_(sb.sb.page_size),
      capacity_(sb.sb.capacity),
      segment_size_(sb.sb.segment_size),
      page_count_(sb.sb.page_count()),
      sb_(std::move(sb.sb)),
      sb_slot_(sb.slot),
      map_(*eng_, std::move(map_file), id_, page_count_, std::move(directory), sb_.epoch),
      segs_(*eng_, dir_, id_, page_size_, segment_size_, sb_.segment_count(), read_only) {}

store_impl::~store_impl() = default;

std::uint64_t store_impl::epoch() const {
  std::shared_lock lk(sb_mu_);
  return sb_.epoch;
}

std::vector<std::byte> store_impl::root() const {
  std::shared_lock lk(sb_mu_);
  return sb_.root;
}

bool store_impl::prepared() const { return prepared_.load(std::memory_order_acquire); }

store_stats store_impl::stats() const {
  store_stats s;
  s.pages_read = stat_pages_read_;
  s.read_requests = stat_read_requests_;
  s.zero_pages_read = stat_zero_pages_;
  s.pages_written = stat_pages_written_;
  s.commits = stat_commits_;
  s.map_bytes_written = stat_map_bytes_;
  s.freed_pages = stat_freed_pages_;
  s.commit_ns = stat_commit_ns_;
  s.live_bytes = map_.live_pages() * page_size_;
  s.disk_bytes = disk_bytes();
  return s;
}

std::uint64_t store_impl::disk_bytes() const {
  std::uint64_t total = eng_->allocated_bytes(*super_) + eng_->allocated_bytes(map_.file());
  for (std::uint64_t seg : segs_.listed()) {
    auto f = eng_->open(segs_.path_of(seg), io::open_mode::read_only);
    total += eng_->allocated_bytes(*f);
  }
  return total;
}

void store_impl::poison(const std::string& cause) {
  {
    std::lock_guard lk(poison_mu_);
    if (!poisoned_.load()) {
      poison_cause_ = cause;
      poisoned_.store(true, std::memory_order_release);
    }
  }
  map_.wake_all();  // writers waiting for a barrier give up
}

std::string store_impl::poison_cause() const {
  std::lock_guard lk(poison_mu_);
  return poison_cause_;
}

void store_impl::check_usable(const char* op) const {
  if (!poisoned_.load(std::memory_order_acquire)) return;
  throw error(errc::poisoned, dir_, op,
              "an earlier failure ended the epoch (" + poison_cause() +
                  "); the last committed epoch is intact on disk: reopen to continue");
}

void store_impl::check_writable(const char* op) const {
  if (read_only_) throw error(errc::read_only, dir_, op, "datastore is open read-only");
}

void store_impl::check_page(std::uint64_t page, const void* buf, const char* op) const {
  if (page >= page_count_) {
    throw error(errc::invalid_argument, dir_, op,
                "page " + std::to_string(page) + " beyond capacity (" +
                    std::to_string(page_count_) + " pages)");
  }
  if (buf == nullptr) throw error(errc::invalid_argument, dir_, op, "null page buffer");
}

}  // namespace pheap::store
