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

// A creation may target a missing path or an existing empty directory (replaced by the
// rename). Returns true for the latter; throws already_exists otherwise.
bool check_create_target(io::engine& eng, const std::string& dir, const char* op) {
  if (!eng.exists(dir)) return false;
  std::vector<std::string> names;
  try {
    names = eng.list_dir(dir);
  } catch (const error& e) {
    if (e.sys_errno() == ENOTDIR) {
      throw error(errc::already_exists, dir, op, "path exists and is not a directory");
    }
    throw;
  }
  if (!names.empty()) {
    throw error(errc::already_exists, dir, op, "directory exists and is not empty");
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

// The steps of FORMAT.md "Creation" (pheap/sparse_store.hpp, store_creation). Members are
// destroyed in reverse: the datastore lock goes before the creation directory's.
struct store_creation::state {
  std::shared_ptr<io::engine> eng;
  std::string dst;
  const char* op;
  bool replaces_empty_dir = false;
  bool published = false;
  std::uint64_t max_epoch = ~std::uint64_t{0};
  std::uint64_t pin_limit = store_options{}.pin_limit;
  store::creation_dir tmp;
  std::unique_ptr<io::file> lock;  // pheap.super's datastore lock, from write_store() on

  ~state() {
    lock.reset();
    if (!published) tmp.discard(*eng);
  }
};

store_creation::store_creation(std::unique_ptr<state> s) : s_(std::move(s)) {}
store_creation::store_creation(store_creation&&) noexcept = default;
store_creation& store_creation::operator=(store_creation&&) noexcept = default;
store_creation::~store_creation() = default;

const std::string& store_creation::path() const { return s_->tmp.path(); }

store_creation store_creation::make(const std::string& dst, const char* op,
                                    std::shared_ptr<io::engine> engine) {
  using namespace store;
  auto s = std::make_unique<state>();
  s->eng = engine ? std::move(engine) : io::default_engine();
  s->dst = dst;
  s->op = op;
  check_datastore_name(dst, op);
  s->replaces_empty_dir = check_create_target(*s->eng, dst, op);
  s->tmp = creation_dir::make(*s->eng, dst, op);
  return store_creation(std::move(s));
}

void store_creation::write_store(const store_options& opt) {
  using namespace store;
  state& s = *s_;
  validate_geometry(s.dst, opt.page_size, opt.segment_size, opt.capacity);
  superblock sb;
  sb.page_size = opt.page_size;
  sb.id = new_uuid();
  sb.segment_size = opt.segment_size;
  sb.capacity = opt.capacity;
  store_impl::write_new(*s.eng, s.tmp.path(), sb);
  // The flock follows the inode through the rename: nobody can open the datastore between
  // the rename and publish()'s return without finding it locked.
  s.lock = s.eng->open(join(s.tmp.path(), super_name), io::open_mode::read_only);
  lock_datastore(*s.lock, s.dst, false, s.op);
  s.max_epoch = opt.max_epoch;
  s.pin_limit = opt.pin_limit;
}

std::unique_ptr<sparse_store> store_creation::open_store(const store_options& opt) {
  state& s = *s_;
  if (!s.lock || s.published) {
    throw error(errc::invalid_argument, s.dst, s.op,
                "open_store() needs a written, unpublished creation (write_store() first)");
  }
  // No lock of its own: a second flock of pheap.super would conflict with ours.
  return store::store_impl::attach(s.eng, s.tmp.path(), nullptr, false, opt.max_epoch);
}

std::unique_ptr<sparse_store> store_creation::publish() {
  state& s = *s_;
  s.published = true;  // from here on, a failure removes the creation directory itself
  s.tmp.publish(*s.eng, s.dst, s.op, s.replaces_empty_dir);
  if (!s.lock) return nullptr;
  try {
    auto st = store::store_impl::attach(s.eng, s.dst, std::move(s.lock), false, s.max_epoch);
    st->join_readers(s.pin_limit);
    return st;
  } catch (...) {
    // Not usable after all (an I/O error opening it): a thrown creation leaves no datastore.
    take_back();
    throw;
  }
}

void store_creation::take_back() noexcept {
  state& s = *s_;
  if (!s.published) return;
  s.lock.reset();
  store::take_back(*s.eng, s.dst, s.op, s.replaces_empty_dir);
}

std::unique_ptr<sparse_store> sparse_store::create(const std::string& dir,
                                                   const store_options& opt) {
  using namespace store;
  validate_geometry(dir, opt.page_size, opt.segment_size, opt.capacity);
  if (opt.read_only) {
    throw error(errc::invalid_argument, dir, "create", "cannot create a read-only datastore");
  }
  // Built under a temporary name in the same parent, made durable, then renamed into place: a
  // crash at any point leaves `dir` absent (or the empty directory it was) or holding a
  // complete epoch-0 datastore.
  store_creation c = store_creation::make(dir, "create", opt.engine);
  c.write_store(opt);
  return c.publish();
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
  // Readers beside a writer hold no flock: the reader table refuses while one is attached,
  // and keeps new ones out until the table is deleted with the rest.
  std::unique_ptr<reader_table> readers;
  if (eng->exists(join(dir, readers_name))) {
    auto f = eng->open(super_path, io::open_mode::read_only);
    const superblock sb = read_superblock(*eng, *f, super_path).sb;
    readers = reader_table::attach(*eng, dir, {sb.page_size, sb.id, 0});
    if (readers) readers->exclude(reader_table::exclusion::removing, dir, "remove");
  }
  for (const auto& n : eng->list_dir(dir)) {
    if (n != super_name) remove_entry(*eng, join(dir, n));
  }
  eng->remove_file(super_path);
  lock.reset();
  eng->remove_dir(dir);
}

}  // namespace pheap
