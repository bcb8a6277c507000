// sparse_store/direct_map.cpp — the region at fixed file offsets, for the kernel-mmap heap
// backend (FORMAT.md "Direct mapping"). The region is *laid out* when home 0 of segment i IS
// the region's bytes [i·S, (i+1)·S): every page with data has its copy in home 0, and no page
// without data has non-zero bytes there (a copy a crash or a discard left behind).
//
//   prepare_direct_mapping(root)  commit(root); move every page whose copy is in home 1 to
//                                 home 0 (ordinary writes, which target home 0 for such a
//                                 page) and create every segment; commit(root) again; punch
//                                 every copy no version names (home 0 junk, home 1 stale).
//   direct_mapping_possible()     laid out?  direct_extents()  home 0 of every segment.
//   finish_direct_mapping(root)   the mapping wrote home 0 behind the map's back: every page
//                                 of home 0 is read, its state and CRC set from its bytes
//                                 (all zeros: no data), its segment synced; commit(root).
// The caller runs none of them while it or another thread writes pages through the store.
#include <cstdlib>
#include <cstring>

#include "pheap/crc32c.hpp"
#include "pheap/error.hpp"
#include "layout.hpp"
#include "store_impl.hpp"

namespace pheap::store {

namespace {

// Bytes of page copies moved per engine call by relocation and adoption.
constexpr std::size_t chunk_bytes = 16u << 20;

struct aligned_pages {
  explicit aligned_pages(std::size_t bytes)
      : p(static_cast<std::byte*>(std::aligned_alloc(4096, std::max<std::size_t>(bytes, 4096)))) {
    if (p == nullptr) throw std::bad_alloc();
  }
  ~aligned_pages() { std::free(p); }
  aligned_pages(const aligned_pages&) = delete;
  aligned_pages& operator=(const aligned_pages&) = delete;
  std::byte* p;
};

}  // namespace

template <class Fn>
void store_impl::for_each_stale_run(bool first_only, Fn&& fn) {
  const std::uint64_t pps = segs_.pages_per_segment();
  std::vector<std::uint8_t> in_use;
  for (std::uint64_t seg : segs_.listed()) {
    auto f = segs_.if_exists(seg);
    if (!f) continue;
    const std::uint64_t base = seg * pps;
    for (const page_home h : {page_home::first, page_home::second}) {
      if (first_only && h == page_home::second) continue;
      segs_.for_each_data_run(*f, h, [&](std::uint64_t first, std::uint64_t end) {
        end = std::min(end, page_count_ - base);
        if (first >= end) return;
        map_->load_range(base + first, base + end);
        map_->homes_in_use(base + first, base + end, in_use);
        std::uint64_t run = end;
        for (std::uint64_t p = first; p <= end; ++p) {
          const bool stale = p < end && !(in_use[p - first] & (1u << home_index(h)));
          if (stale && run == end) run = p;
          if (!stale && run != end) {
            fn(f, h, base + run, base + p);
            run = end;
          }
        }
      });
    }
  }
}

bool store_impl::direct_mapping_possible() {
  std::lock_guard cl(commit_mu_);
  return laid_out();
}

bool store_impl::laid_out() {
  for (const dir_entry& e : map_->committed_directory()) {
    if (e.flags & dir_entry::has_second) return false;
  }
  bool zeros = true;
  aligned_pages buf(page_size_);
  for_each_stale_run(true, [&](const std::shared_ptr<io::file>& f, page_home h,
                               std::uint64_t first, std::uint64_t end) {
    for (std::uint64_t p = first; zeros && p < end; ++p) {
      eng_->read_at(*f, segs_.offset_of(p, h), buf.p, page_size_);
      zeros = all_zero(buf.p, page_size_);
    }
  });
  return zeros;
}

std::uint64_t store_impl::prepare_direct_mapping(std::span<const std::byte> root) {
  check_writable("prepare_direct_mapping");
  // The mapping writes homes behind the map's back: no reader may read beside it (refused
  // while one is attached; later ones are refused until finish_direct_mapping or our exit).
  if (table_) table_->exclude(reader_table::exclusion::direct, dir_, "prepare_direct_mapping");
  commit(root);  // everything written so far
  {
    std::lock_guard cl(commit_mu_);
    check_usable("prepare_direct_mapping");
    relocate_second_homes();
    try {
      const std::uint64_t w = map_->working_epoch();
      for (std::uint64_t seg = 0; seg < segs_.segment_count(); ++seg) {
        bool created = false;
        segs_.for_write(seg, created);
        if (created) note_written(w, seg, true);
      }
    } catch (const error& e) {
      poison("creating the segments for direct mapping failed: " + std::string(e.what()));
      throw;
    }
    direct_mapped_.store(true);
  }
  const std::uint64_t e = commit(root);  // now every page with data is in home 0
  std::lock_guard cl(commit_mu_);
  punch_stale_copies();
  return e;
}

// Pages whose committed copy is in home 1 are read and written again: their next copy goes to
// home 0 (write_path.cpp), which the committed map does not use.
void store_impl::relocate_second_homes() {
  const std::vector<dir_entry> dir = map_->committed_directory();
  const std::size_t per_chunk = std::max<std::size_t>(1, chunk_bytes / page_size_);
  aligned_pages buf(per_chunk * page_size_);
  std::vector<page_read> reads;
  auto flush = [&] {
    if (reads.empty()) return;
    read_pages(reads);
    std::vector<page_write> writes;
    for (const auto& r : reads) writes.push_back({r.page, r.buf});
    write_pages(writes);
    reads.clear();
  };
  for (std::uint64_t b = 0; b < dir.size(); ++b) {
    if (!(dir[b].flags & dir_entry::has_second)) continue;
    map_->load_range(b * pages_per_block, std::min<std::uint64_t>((b + 1) * pages_per_block, page_count_));
    const block_version v = map_->committed_version(b);
    for (std::uint32_t i = 0; i < pages_per_block; ++i) {
      if (v.home(i) != page_home::second) continue;
      reads.push_back({b * pages_per_block + i, buf.p + reads.size() * page_size_});
      if (reads.size() == per_chunk) flush();
    }
  }
  flush();
}

void store_impl::punch_stale_copies() {
  try {
    for_each_stale_run(false, [&](const std::shared_ptr<io::file>& f, page_home h,
                                  std::uint64_t first, std::uint64_t end) {
      eng_->punch_hole(*f, segs_.offset_of(first, h), (end - first) * page_size_);
    });
  } catch (const error& e) {
    poison("punching stale page copies failed: " + std::string(e.what()));
    throw;
  }
}

std::vector<direct_extent> store_impl::direct_extents() {
  std::lock_guard cl(commit_mu_);
  if (slot_ >= 0) {
    throw error(errc::unavailable, dir_, "direct_extents",
                "opened as a reader beside a writer, whose writes go to the files a mapping "
                "would show: the kernel-mmap backend cannot serve concurrent readers (open "
                "read-only with store_options::beside_writer = false: no writer meanwhile)");
  }
  if (!laid_out()) {
    throw error(errc::unavailable, dir_, "direct_extents",
                "the last commit is not laid out at fixed offsets (pages of it live in their "
                "second home, or stale copies in the first): open the datastore read-write once "
                "and prepare it for direct mapping");
  }
  std::vector<direct_extent> out;
  for (std::uint64_t i = 0; i < segs_.segment_count(); ++i) {
    out.push_back({segs_.if_exists(i), 0, i * segment_size_,
                   std::min(segment_size_, capacity_ - i * segment_size_)});
  }
  return out;
}

std::uint64_t store_impl::finish_direct_mapping(std::span<const std::byte> root) {
  check_writable("finish_direct_mapping");
  {
    std::lock_guard cl(commit_mu_);
    check_usable("finish_direct_mapping");
    try {
      adopt_files();
    } catch (const error& e) {
      poison("adopting the pages written through the mapping failed: " + std::string(e.what()));
      throw;
    }
    direct_mapped_.store(false);
  }
  const std::uint64_t e = commit(root);
  if (table_) table_->admit(reader_table::exclusion::direct);
  return e;
}

// Every page of home 0 of every segment: state and CRC from its bytes (holes and all-zero pages
// have no data); pages with data in the map but outside the files' data extents lose it.
void store_impl::adopt_files() {
  const std::uint64_t pps = segs_.pages_per_segment();
  const std::size_t per_chunk = std::max<std::size_t>(1, chunk_bytes / page_size_);
  aligned_pages buf(per_chunk * page_size_);
  const std::uint64_t w = map_->working_epoch();
  for (std::uint64_t seg = 0; seg < segs_.segment_count(); ++seg) {
    const std::uint64_t base = seg * pps;
    const std::uint64_t end = std::min(base + pps, page_count_);
    std::vector<bool> in_run(end - base, false);
    if (auto f = segs_.if_exists(seg)) {
      note_written(w, seg, false);  // the mapping's writes: the commit syncs them again
      std::vector<std::uint64_t> pages;
      segs_.for_each_data_run(*f, page_home::first, [&](std::uint64_t a, std::uint64_t b) {
        for (std::uint64_t p = a; p < b && base + p < end; ++p) {
          pages.push_back(base + p);
          in_run[p] = true;
        }
      });
      map_->load_pages(pages);
      for (std::size_t i = 0; i < pages.size(); i += per_chunk) {
        const std::size_t n = std::min(per_chunk, pages.size() - i);
        std::vector<io::read_request> reads;
        for (std::size_t k = 0; k < n; ++k) {
          reads.push_back({f.get(), segs_.offset_of(pages[i + k], page_home::first),
                           buf.p + k * page_size_, page_size_});
        }
        eng_->read(reads);
        for (std::size_t k = 0; k < n; ++k) {
          const std::byte* img = buf.p + k * page_size_;
          const bool zero = all_zero(img, page_size_);
          map_->adopt(pages[i + k], zero ? page_home::none : page_home::first,
                     zero ? 0 : crc32c(img, page_size_));
        }
      }
    }
    map_->load_range(base, end);
    for (std::uint64_t p = base; p < end; ++p) {
      if (!in_run[p - base] && map_->may_have_data(p)) map_->adopt(p, page_home::none, 0);
    }
  }
}

}  // namespace pheap::store
