// sparse_store/upgrade.cpp — sparse_store::upgrade(SRC, DST): a format-4 copy of a format-2
// datastore (FORMAT.md "Upgrade from format 2"); upgrade_in_place(DIR): format 3 → 4 (FORMAT.md
// "Upgrade from format 3"). SRC is opened read-only through format2/
// (every page it serves verified as format 2 verified it); DST is built like create() —
// under a temporary name next to it, renamed into place once complete and durable — with the
// same geometry, every page SRC may hold data in (all-zero pages are left without data), and
// SRC's root, in one commit. A crash leaves DST absent or a complete format-4 datastore.
#include "pheap/error.hpp"
#include "creation.hpp"
#include "format2/format2.hpp"
#include "layout.hpp"
#include "store_impl.hpp"
#include "superblock.hpp"

namespace pheap {

// Format 4 is format 3's bytes with readers beside a writer: only the superblock's version
// changes. Under the exclusive lock (no reader of either protocol, no writer), the record of
// the watermark E is written with version 4 into the slot not holding it (the older epoch's)
// and synced, then into its own slot and synced. A crash between leaves a version-4 and a
// version-3 copy of E, and open prefers the newer version of one epoch: E is never lost, and
// running the upgrade again finishes it.
bool sparse_store::upgrade_in_place(const std::string& dir, const store_options& opt) {
  using namespace store;
  auto eng = opt.engine ? opt.engine : io::default_engine();
  if (!eng->exists(dir)) throw error(errc::not_found, dir, "upgrade", "datastore directory does not exist");
  const std::string super_path = join(dir, super_name);
  if (!eng->exists(super_path)) {
    throw error(errc::not_a_datastore, dir, "upgrade", "no " + std::string(super_name) + ": not a pheap datastore");
  }
  auto lock = eng->open(super_path, io::open_mode::read_only);
  lock_datastore(*lock, dir, false, "upgrade");
  auto super = eng->open(super_path, io::open_mode::read_write);
  chosen_slot chosen = read_superblock(*eng, *super, super_path);
  if (chosen.sb.version == format_version) return false;
  superblock next = chosen.sb;
  next.version = format_version;
  write_slot(*eng, *super, 1 - chosen.slot, next);
  eng->sync(*super);
  write_slot(*eng, *super, chosen.slot, next);
  eng->sync(*super);
  return true;
}

void sparse_store::upgrade(const std::string& src, const std::string& dst, const store_options& opt) {
  using namespace store;
  auto eng = opt.engine ? opt.engine : io::default_engine();
  auto old = format2::open_read_only(src, eng);
  check_datastore_name(dst, "upgrade");
  if (eng->exists(dst)) throw error(errc::already_exists, dst, "upgrade", "destination already exists");

  superblock sb;
  sb.page_size = old->page_size();
  sb.id = new_uuid();
  sb.segment_size = old->segment_size();
  sb.capacity = old->capacity();
  creation_dir tmp = creation_dir::make(*eng, dst, "upgrade");
  try {
    store_impl::write_new(*eng, tmp.path(), sb);
    auto lock = eng->open(join(tmp.path(), super_name), io::open_mode::read_only);
    lock_datastore(*lock, dst, false, "upgrade");
    auto copy = store_impl::attach(eng, tmp.path(), std::move(lock), false, opt.max_epoch);
    const std::uint32_t ps = sb.page_size;
    const std::size_t per_batch = std::max<std::size_t>(1, (16u << 20) / ps);
    std::vector<std::byte> buf(per_batch * ps);
    std::vector<page_read> reads;
    auto flush = [&] {
      if (reads.empty()) return;
      old->read_pages(reads);
      std::vector<page_write> writes;
      for (const auto& r : reads) {
        if (!all_zero(r.buf, ps)) writes.push_back({r.page, r.buf});
      }
      if (!writes.empty()) copy->write_pages(writes);
      reads.clear();
    };
    for (std::uint64_t p = 0; p < sb.page_count(); ++p) {
      if (!old->may_have_data(p)) continue;
      reads.push_back({p, buf.data() + reads.size() * ps});
      if (reads.size() == per_batch) flush();
    }
    flush();
    copy->commit(old->root());
  } catch (...) {
    tmp.discard(*eng);
    throw;
  }
  tmp.publish(*eng, dst, "upgrade", false);
}

}  // namespace pheap
