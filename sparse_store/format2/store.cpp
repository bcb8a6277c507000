// sparse_store/format2/store.cpp — a format-2 datastore opened read-only (format2.hpp).
//
// Open: the datastore lock (shared), the newest valid superblock slot (E, journal length L),
// every declared segment checked (segment_set.hpp), the may-have-data bitmap from the
// segments' data extents, then journal-E scanned in [0, L) — every record checked (magic,
// type, epoch, header CRC, writer uuid, image CRCs) — and indexed: a page's newest entry
// wins, a discard zeroes its range. Reads consult the journal index first, then the segments
// (verified against their CRC tables), as format 2's read-only open did.
#include <cstring>

#include "pheap/error.hpp"
#include "../creation.hpp"
#include "../layout.hpp"
#include "format2.hpp"
#include "journal.hpp"
#include "page_bitmap.hpp"
#include "segment_set.hpp"
#include "superblock.hpp"

namespace pheap::store::format2 {

namespace {

class store final : public sparse_store {
 public:
  store(std::shared_ptr<io::engine> eng, std::string dir, std::unique_ptr<io::file> lock,
        superblock sb)
      : eng_(std::move(eng)),
        dir_(std::move(dir)),
        lock_(std::move(lock)),
        sb_(std::move(sb)),
        bits_(sb_.capacity / sb_.page_size),
        segs_(*eng_, dir_, sb_) {}

  void recover() {
    segs_.open(sb_, eng_->list_dir(dir_));
    segs_.mark_data(bits_);
    if (sb_.journal_length == 0) return;
    const std::string path = join(dir_, journal_name(sb_.epoch));
    if (!eng_->exists(path)) {
      throw error(errc::corrupt, path, "open",
                  "missing " + journal_name(sb_.epoch) + " required by epoch " + std::to_string(sb_.epoch));
    }
    journal_ = eng_->open(path, io::open_mode::read_only);
    journal_visitor v;
    v.on_pages = [&](const std::vector<std::uint64_t>& pages, std::uint64_t image_off) {
      for (std::size_t i = 0; i < pages.size(); ++i) {
        bits_.set(pages[i]);
        index_.put(pages[i], image_off + i * sb_.page_size);
      }
    };
    v.on_discard = [&](std::uint64_t rec_off, std::uint64_t first, std::uint64_t count) {
      bits_.for_each_set(first, first + count, [&](std::uint64_t p) {
        bits_.clear(p);
        index_.put(p, rec_off | journal_index::zero_bit);
      });
    };
    scan_journal(*eng_, *journal_, path, sb_.journal_id, sb_.epoch, sb_.journal_length,
                 sb_.page_size, sb_.capacity / sb_.page_size, v);
  }

  void read_pages(std::span<const page_read> batch) override {
    const std::uint32_t ps = sb_.page_size;
    std::vector<io::read_request> reqs;
    std::vector<std::size_t> from_segment;  // indexes into reqs, verified against the tables
    std::vector<std::uint64_t> pages;
    for (const auto& r : batch) {
      if (r.page >= sb_.capacity / ps || r.buf == nullptr) {
        throw error(errc::invalid_argument, dir_, "read_pages", "page " + std::to_string(r.page) + " beyond capacity");
      }
      const std::uint64_t* entry = bits_.test(r.page) ? index_.find(r.page) : nullptr;
      const auto& seg = segs_.get(r.page / segs_.pages_per_segment());
      if (!bits_.test(r.page) || (entry != nullptr && journal_index::is_zero(*entry)) ||
          (entry == nullptr && !seg)) {
        std::memset(r.buf, 0, ps);
      } else if (entry != nullptr) {
        reqs.push_back({journal_.get(), journal_index::offset(*entry), r.buf, ps});
      } else {
        from_segment.push_back(reqs.size());
        pages.push_back(r.page);
        reqs.push_back({seg.get(), (r.page % segs_.pages_per_segment()) * ps, r.buf, ps});
      }
    }
    if (!reqs.empty()) eng_->read(reqs);
    for (std::size_t k = 0; k < from_segment.size(); ++k) {
      const void* img = reqs[from_segment[k]].buf;
      if (!segs_.verify(pages[k], img)) throw segs_.verify_error(pages[k], img, "read_pages");
    }
  }
  bool may_have_data(std::uint64_t page) const override {
    return page < bits_.size() && bits_.test(page);
  }
  void check_files() override {}  // open checked every segment the superblock names (segment_set)

  void write_pages(std::span<const page_write>) override { refuse("write_pages"); }
  void discard(std::uint64_t, std::uint64_t) override { refuse("discard"); }
  std::uint64_t commit(std::span<const std::byte>) override { refuse("commit"); }
  std::uint64_t prepare(std::span<const std::byte>) override { refuse("prepare"); }
  std::uint64_t confirm() override { refuse("confirm"); }
  bool prepared() const override { return false; }
  void snapshot(const std::string&) override { convert_first("snapshot"); }
  bool direct_mapping_possible() override { return false; }
  std::uint64_t prepare_direct_mapping(std::span<const std::byte>) override { refuse("prepare_direct_mapping"); }
  std::vector<direct_extent> direct_extents() override { convert_first("direct_extents"); }
  std::uint64_t finish_direct_mapping(std::span<const std::byte>) override { refuse("finish_direct_mapping"); }

  std::uint64_t epoch() const override { return sb_.epoch; }
  std::vector<std::byte> root() const override { return sb_.root; }
  const std::string& path() const override { return dir_; }
  const uuid& id() const override { return sb_.id; }
  std::uint32_t page_size() const override { return sb_.page_size; }
  std::uint64_t capacity() const override { return sb_.capacity; }
  std::uint64_t segment_size() const override { return sb_.segment_size; }
  bool read_only() const override { return true; }
  io::engine& engine() const override { return *eng_; }
  store_stats stats() const override { return {}; }
  std::uint64_t disk_bytes() const override { return 0; }

 private:
  [[noreturn]] void refuse(const char* op) const {
    throw error(errc::read_only, dir_, op, "a format-2 datastore is opened read-only (for conversion)");
  }
  [[noreturn]] void convert_first(const char* op) const {
    throw error(errc::older_format, dir_, op,
                "written by store format 2; convert it with `pheap upgrade SRC DST` first");
  }

  std::shared_ptr<io::engine> eng_;
  std::string dir_;
  std::unique_ptr<io::file> lock_;
  superblock sb_;
  page_bitmap bits_;
  segment_set segs_;
  std::shared_ptr<io::file> journal_;
  journal_index index_;
};

}  // namespace

std::unique_ptr<sparse_store> open_read_only(const std::string& dir, std::shared_ptr<io::engine> eng) {
  if (!eng->exists(dir)) throw error(errc::not_found, dir, "open", "datastore directory does not exist");
  const std::string super_path = join(dir, super_name);
  if (!eng->exists(super_path)) {
    throw error(errc::not_a_datastore, dir, "open", "no " + std::string(super_name) + ": not a pheap datastore");
  }
  auto lock = eng->open(super_path, io::open_mode::read_only);
  lock_datastore(*lock, dir, true, "open read-only");
  auto super = eng->open(super_path, io::open_mode::read_only);
  superblock sb = read_superblock(*eng, *super, super_path);
  auto s = std::make_unique<store>(std::move(eng), dir, std::move(lock), std::move(sb));
  s->recover();
  return s;
}

}  // namespace pheap::store::format2
