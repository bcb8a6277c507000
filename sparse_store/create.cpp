// sparse_store/create.cpp — create() and remove() (FORMAT.md "Creation", "Removal"). The
// temporary-name protocol and the lock are creation.hpp's; this file writes a new datastore's
// epoch-0 files:
//
//   pheap.map    the directory of epoch 0 (every map block without a copy) in home 0, the
//                file extended to its full size (sparse)
//   pheap.super  slot 0 = epoch 0 naming that directory, empty root; slot 1 zeros
//
// both fdatasync'ed, then the creation directory fsync'ed (their names), before the rename
// can publish the datastore. No segment exists yet: the first write into a segment creates it.
#include <cerrno>
#include <cstring>

#include "pheap/crc32c.hpp"
#include "pheap/error.hpp"
#include "creation.hpp"
#include "layout.hpp"
#include "store_impl.hpp"

namespace pheap::store {

namespace {

// create() may target a missing path or an existing empty directory (replaced by the rename).
// Returns true for the latter; throws already_exists otherwise.
bool check_create_target(io::engine& eng, const std::string& dir) {
  if (!eng.exists(dir)) return false;
  std::vector<std::string> names;
  try {
    names = eng.list_dir(dir);
  } catch (const error& e) {
    if (e.sys_errno() == ENOTDIR) {
      throw error(errc::already_exists, dir, "create", "path exists and is not a directory");
    }
    throw;
  }
  if (!names.empty()) {
    throw error(errc::already_exists, dir, "create", "directory exists and is not empty");
  }
  return true;
}

}  // namespace

void store_impl::write_new(io::engine& eng, const std::string& dir, const superblock& geometry) {
  superblock sb = geometry;
  const map_layout layout(sb.page_count());
  const std::vector<dir_entry> entries(layout.blocks);
  const std::vector<std::byte> directory = encode_directory({sb.id, 0, layout.blocks}, entries);
  sb.epoch = 0;
  sb.base_epoch = 0;
  sb.prepared = false;
  sb.directory_home = 0;
  sb.directory_length = directory_length(sb.page_count());
  sb.directory_crc = crc32c(directory.data(), sb.directory_length);
  {
    auto map = eng.open(join(dir, map_name), io::open_mode::create_new);
    eng.write_at(*map, layout.directory_offset(0), directory.data(), directory.size());
    eng.truncate(*map, layout.file_size());
    eng.sync(*map);
  }
  auto super = eng.open(join(dir, super_name), io::open_mode::create_new);
  std::vector<std::byte> both(super_file_size);
  const auto slot = encode_slot(sb);
  std::memcpy(both.data(), slot.data(), slot_size);
  eng.write_at(*super, 0, both.data(), both.size());
  eng.sync(*super);  // the epoch-0 commit record
  eng.sync_dir(dir);  // the names, before the directory can appear under its final name
}

}  // namespace pheap::store

namespace pheap {

std::unique_ptr<sparse_store> sparse_store::create(const std::string& dir,
                                                   const store_options& opt) {
  using namespace store;
  validate_geometry(dir, opt.page_size, opt.segment_size, opt.capacity);
  if (opt.read_only) {
    throw error(errc::invalid_argument, dir, "create", "cannot create a read-only datastore");
  }
  auto eng = opt.engine ? opt.engine : io::default_engine();
  check_datastore_name(dir, "create");
  const bool replaces_empty_dir = check_create_target(*eng, dir);

  superblock sb;
  sb.page_size = opt.page_size;
  sb.id = new_uuid();
  sb.segment_size = opt.segment_size;
  sb.capacity = opt.capacity;

  // Built under a temporary name in the same parent, made durable, then renamed into place: a
  // crash at any point leaves `dir` absent (or the empty directory it was) or holding a
  // complete epoch-0 datastore.
  creation_dir tmp = creation_dir::make(*eng, dir, "create");
  std::unique_ptr<io::file> lock;
  try {
    store_impl::write_new(*eng, tmp.path(), sb);
    // The flock follows the inode through the rename: nobody can open the datastore between
    // the rename and our return without finding it locked.
    lock = eng->open(join(tmp.path(), super_name), io::open_mode::read_only);
    lock_datastore(*lock, dir, false, "create");
  } catch (...) {
    tmp.discard(*eng);
    throw;
  }
  tmp.publish(*eng, dir, "create", replaces_empty_dir);
  try {
    return store_impl::attach(eng, dir, std::move(lock), false, opt.max_epoch);
  } catch (...) {
    // Not usable after all (an I/O error opening it): a thrown create leaves no datastore.
    take_back(*eng, dir, "create", replaces_empty_dir);
    throw;
  }
}

void sparse_store::remove(const std::string& dir, const store_options& opt) {
  using namespace store;
  auto eng = opt.engine ? opt.engine : io::default_engine();
  if (!eng->exists(dir)) throw error(errc::not_found, dir, "remove", "no such datastore");
  const std::string super_path = join(dir, super_name);
  if (!eng->exists(super_path)) {
    throw error(errc::not_a_datastore, dir, "remove",
                "no " + std::string(super_name) +
                    ": refusing to delete a directory that is not a datastore");
  }
  // Held until everything is gone: no process can open the datastore half-deleted. The
  // superblock goes last, so a remove cut short leaves a datastore (damaged, still locked by
  // the same protocol) that a second remove finishes, never an unrecognisable directory.
  auto lock = eng->open(super_path, io::open_mode::read_only);
  lock_datastore(*lock, dir, false, "remove");
  for (const auto& n : eng->list_dir(dir)) {
    if (n != super_name) remove_entry(*eng, join(dir, n));
  }
  eng->remove_file(super_path);
  lock.reset();
  eng->remove_dir(dir);
}

}  // namespace pheap
