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
      map_file_(std::move(map_file)),
      segs_(*eng_, dir_, id_, page_size_, segment_size_, sb_.segment_count(), read_only) {
  // A reader builds its map once it is registered (open_reader): every datastore has a block.
  if (!directory.empty()) map_ = std::make_unique<page_map>(*eng_, map_file_, id_, page_count_, std::move(directory), sb_.epoch);
}

store_impl::~store_impl() {
  if (table_ && slot_ >= 0) table_->release(slot_);
}

std::shared_lock<std::shared_mutex> store_impl::reading() const {
  if (slot_ < 0) return {};
  return std::shared_lock<std::shared_mutex>(view_mu_);
}

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
  {
    const auto lk = reading();
    s.live_bytes = map_->live_pages() * page_size_;
  }
  s.disk_bytes = disk_bytes();
  s.pins_made = stat_pins_;
  s.pinned_reads = stat_pinned_reads_;
  s.pin_bytes_written = stat_pin_bytes_;
  s.reader_protect_ns = stat_protect_ns_;
  if (table_) {
    const std::vector<reader_info> live = table_->readers();
    s.readers = live.size();
    for (const reader_info& r : live) {
      if (s.oldest_reader_epoch == 0 || r.epoch < s.oldest_reader_epoch) s.oldest_reader_epoch = r.epoch;
    }
    const reader_table::counters c = table_->stats();
    s.pinned_bytes = c.pinned_bytes;
    s.readers_expired = c.expired;
    s.pin_limit = table_->limit_bytes();
  }
  return s;
}

std::uint64_t store_impl::disk_bytes() const {
  std::uint64_t total = eng_->allocated_bytes(*super_) + eng_->allocated_bytes(*map_file_);
  for (std::uint64_t seg : segs_.listed()) {
    auto f = eng_->open(segs_.path_of(seg), io::open_mode::read_only);
    total += eng_->allocated_bytes(*f);
  }
  // The copies kept for readers (the reader table itself is shared memory, not counted).
  if (const std::string pinned = join(dir_, pinned_name); table_ && eng_->exists(pinned)) {
    auto f = eng_->open(pinned, io::open_mode::read_only);
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
  map_->wake_all();  // writers waiting for a barrier give up
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
