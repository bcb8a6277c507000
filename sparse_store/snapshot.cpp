// sparse_store/snapshot.cpp — snapshot(dst) (FORMAT.md "Snapshot"): an independent datastore
// holding exactly the last durable epoch E, while writers continue.
//
// Under the commit lock (no commit runs, so nothing a durable map names is written, punched or
// superseded), with every map block holding data loaded:
//   1. a creation directory next to dst (creation.hpp; leftovers of crashed snapshots removed)
//   2. every segment E names a page in is cloned (engine::clone_file: reflink, else a sparse
//      copy), given the snapshot's identity header, and in the copy every home E does not name
//      is punched out (stale copies, and whatever writers of E+1 put there meanwhile) — except,
//      while the region is mapped directly (direct_map.cpp), home 0, which holds what the
//      mapping wrote: such a copy is finished by finish_direct_mapping, as its source will be
//   3. pheap.map: E's map, every block with data in home 0 under the new uuid, the directory in
//      home 0; pheap.super: E's record (root, geometry) with the new uuid, in slot 0
//   4. fdatasync of every file, fsync of the creation directory
//   5. rename over dst (the snapshot point) and fsync of dst's parent
// A crash at any point leaves dst absent or a complete datastore of epoch E.
#include <cstring>

#include "pheap/crc32c.hpp"
#include "pheap/error.hpp"
#include "creation.hpp"
#include "layout.hpp"
#include "store_impl.hpp"

namespace pheap::store {

void store_impl::snapshot(const std::string& dst) {
  // Every failure names the destination the caller passed (an I/O error inside the copy would
  // otherwise name the temporary directory or dst's parent), and keeps its cause.
  try {
    snapshot_impl(dst);
  } catch (const error& e) {
    if (e.path() == dst) throw;
    throw error(e.code(), dst, "snapshot", e.what(), e.sys_errno());
  }
}

void store_impl::snapshot_impl(const std::string& dst) {
  std::lock_guard cl(commit_mu_);
  const auto reader_lk = reading();
  check_usable("snapshot");
  check_datastore_name(dst, "snapshot");
  if (eng_->exists(dst)) {
    throw error(errc::already_exists, dst, "snapshot", "destination already exists");
  }
  superblock out;
  {
    std::shared_lock lk(sb_mu_);
    out = sb_;
  }
  map_->load_range(0, page_count_);
  std::vector<block_version> versions(map_->layout().blocks);
  const std::vector<dir_entry> dir = map_->committed_directory();
  for (std::uint64_t b = 0; b < versions.size(); ++b) {
    if (dir[b].data_pages > 0) versions[b] = map_->committed_version(b);
  }
  creation_dir tmp = creation_dir::make(*eng_, dst, "snapshot");
  try {
    const uuid id = new_uuid();
    const bool mapped = direct_mapped_.load();
    const std::uint64_t pps = segs_.pages_per_segment();
    for (std::uint64_t seg : segs_.listed()) {
      bool named = mapped;  // a mapped region's files are copied whole
      for (std::uint64_t b = seg * pps / pages_per_block;
           !named && b < versions.size() && b * pages_per_block < (seg + 1) * pps; ++b) {
        named = dir[b].data_pages > 0;
      }
      if (named) copy_segment(seg, join(tmp.path(), segment_name(seg)), id, versions);
    }
    out.id = id;
    out.prepared = false;
    write_snapshot_map(join(tmp.path(), map_name), id, out.epoch, versions, out);
    auto f = eng_->open(join(tmp.path(), super_name), io::open_mode::create_new);
    std::vector<std::byte> both(super_file_size);
    const auto slot = encode_slot(out);
    std::memcpy(both.data(), slot.data(), slot_size);
    eng_->write_at(*f, 0, both.data(), both.size());
    eng_->sync(*f);
    eng_->sync_dir(tmp.path());  // every name in it, before it can appear as dst
    // A reader beside a writer: the copies patched in from pheap.pinned were the epoch's only
    // if the writer had not expired this reader meanwhile.
    if (slot_ >= 0) check_not_expired(slot_, out.epoch);
  } catch (...) {
    tmp.discard(*eng_);
    throw;
  }
  tmp.publish(*eng_, dst, "snapshot", false);
}

void store_impl::copy_segment(std::uint64_t seg, const std::string& to, const uuid& id,
                              const std::vector<block_version>& versions) {
  auto src = segs_.for_read(seg, seg * segs_.pages_per_segment(), epoch());
  eng_->clone_file(src->path(), to);
  auto f = eng_->open(to, io::open_mode::read_write);
  segs_.write_identity(*f, seg, id);
  const std::uint64_t base = seg * segs_.pages_per_segment();
  auto state = [&](std::uint64_t page) {
    return versions[page / pages_per_block].home(static_cast<std::uint32_t>(page % pages_per_block));
  };
  if (slot_ >= 0) {
    // A reader beside a writer: homes the writer overwrote after keeping a copy for this
    // epoch get that copy back (pins.cpp; looked up after the clone, so a home overwritten
    // before or during it has its pin linked by then).
    const std::uint64_t e = epoch(), end = std::min(page_count_, base + segs_.pages_per_segment());
    std::vector<std::byte> page(page_size_);
    for (std::uint64_t p = base; p < end; ++p) {
      const page_home h = state(p);
      if (h == page_home::none) continue;
      if (auto run = table_->find(pin_kind::page, p, e)) {
        eng_->read_at(pinned_file(), run->first * reader_table::grain, page.data(), page_size_);
        eng_->write_at(*f, segs_.offset_of(p, h), page.data(), page_size_);
      }
    }
  }
  for (const page_home h : {page_home::first, page_home::second}) {
    if (direct_mapped_.load() && h == page_home::first) continue;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> runs;  // pages to punch, [first, end)
    segs_.for_each_data_run(*f, h, [&](std::uint64_t first, std::uint64_t end) {
      for (std::uint64_t p = first; p < end && base + p < page_count_; ++p) {
        if (state(base + p) == h) continue;
        if (!runs.empty() && runs.back().second == p) {
          runs.back().second = p + 1;
        } else {
          runs.emplace_back(p, p + 1);
        }
      }
    });
    for (const auto& [a, b] : runs) {
      eng_->punch_hole(*f, segs_.offset_of(base + a, h), (b - a) * page_size_);
    }
  }
  eng_->sync(*f);
}

void store_impl::write_snapshot_map(const std::string& path, const uuid& id, std::uint64_t epoch,
                                    const std::vector<block_version>& versions, superblock& out) {
  const map_layout& layout = map_->layout();
  std::vector<dir_entry> dir(layout.blocks);
  std::vector<std::byte> blocks;
  std::vector<std::uint64_t> offsets;
  for (std::uint64_t b = 0; b < layout.blocks; ++b) {
    const std::uint32_t data = versions[b].data_pages();
    if (data == 0) continue;
    const std::size_t at = blocks.size();
    blocks.resize(at + map_block_size);
    encode_map_block(blocks.data() + at, {b, epoch, id, layout.pages_in_block(b)}, versions[b]);
    dir[b] = {epoch, crc32c(blocks.data() + at, map_block_size), static_cast<std::uint16_t>(data),
              static_cast<std::uint8_t>(dir_entry::exists |
                                        (versions[b].any_second() ? dir_entry::has_second : 0))};
    offsets.push_back(layout.block_offset(b, 0));
  }
  const std::vector<std::byte> directory = encode_directory({id, epoch, layout.blocks}, dir);
  auto f = eng_->open(path, io::open_mode::create_new);
  std::vector<io::write_request> reqs;
  for (std::size_t k = 0; k < offsets.size(); ++k) {
    reqs.push_back({f.get(), offsets[k], blocks.data() + k * map_block_size, map_block_size});
  }
  reqs.push_back({f.get(), layout.directory_offset(0), directory.data(), directory.size()});
  eng_->write(reqs);
  eng_->truncate(*f, layout.file_size());
  eng_->sync(*f);
  out.directory_home = 0;
  out.directory_length = directory_length(layout.pages);
  out.directory_crc = crc32c(directory.data(), out.directory_length);
}

}  // namespace pheap::store
