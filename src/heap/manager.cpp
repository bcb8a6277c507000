// pheap::manager: datastore lifecycle (create/open/flush/close) on top of the pager, and the
// non-template half of the object API.
#include "pheap/manager.hpp"
#include "pheap/two_phase.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <optional>

#include "heap/mmap_region.hpp"
#include "heap/object_directory.hpp"
#include "heap/region.hpp"
#include "heap/registry.hpp"
#include "heap/root_record.hpp"
#include "heap/segment_allocator.hpp"

namespace pheap {

namespace detail {

class manager_core {
 public:
  std::string path;
  bool ro = false;
  std::unique_ptr<heap::region> pg;  // the backend: pager (uffd) or kernel mmap
  std::unique_ptr<heap::segment_allocator> alloc;
  std::unique_ptr<heap::object_directory> dir;
  mutable std::mutex root_mutex;  // guards root
  heap::root_record root;
  bool registered = false;
  // One participant of a distributed commit (pheap/two_phase.hpp): only prepare/confirm end
  // an epoch; flush() throws and closing commits nothing (a local commit would move this
  // datastore past the epoch its coordinator recorded).
  bool participant = false;
  std::atomic<bool> discard_failed{false};

  // Set when a refresh could not attach the heap of the watermark it moved to: every later
  // use of the manager throws it (manager::core).
  std::optional<error> broken;

  // `refreshing`: the heap of the watermark a refresh moved to (manager::refresh).
  void attach(bool refreshing = false) {
    // A read-only region may map less than the capacity (the part in use: read_only_extent).
    alloc = std::make_unique<heap::segment_allocator>(pg->base(), pg->store().capacity(), ro, path);
    if (alloc->used_extent() > pg->size()) {
      if (refreshing) {
        throw error(errc::unavailable, path, "refresh",
                    "the writer grew the heap to " + std::to_string(alloc->used_extent()) +
                        " bytes, past the " + std::to_string(pg->size()) +
                        " bytes this read-only open could map (the address space did not allow the "
                        "capacity of " + std::to_string(pg->store().capacity()) +
                        " bytes: RLIMIT_AS, ulimit -v): close this manager and open the datastore again");
      }
      throw error(errc::corrupt, path, "open heap",
                  "the heap's chunks in use end at " + std::to_string(alloc->used_extent()) +
                      ", past the " + std::to_string(pg->size()) + " bytes mapped");
    }
    if (alloc->header().chunk_size != root.chunk_size || pg->store().capacity() != root.capacity) {
      throw error(errc::corrupt, path, "open heap",
                  "root record geometry (capacity " + std::to_string(root.capacity) + ", chunk " +
                      std::to_string(root.chunk_size) + ") does not match the heap header");
    }
    dir = std::make_unique<heap::object_directory>(*alloc, path);
    if (!ro) {
      root.heap_format = heap::heap_format_version;  // the directory upgraded an older heap
      // Released chunk ranges become holes (region::discard, see region.hpp). Errors are not
      // fatal here (the chunk is free in the allocator either way; a poisoned store fails the
      // next flush).
      heap::region* rg = pg.get();
      alloc->set_release_hook([rg, this](std::uint64_t off, std::uint64_t len) {
        try {
          rg->discard(off, len);
        } catch (const std::exception& e) {
          // A poisoned store (a failed write or commit before it: a full disk) says nothing new
          // here: the next flush reports the cause, once.
          const auto* pe = dynamic_cast<const error*>(&e);
          if (pe != nullptr && pe->code() == errc::poisoned) return;
          if (!discard_failed.exchange(true)) {
            std::fprintf(stderr, "pheap: %s: discarding freed chunks failed, space is not reclaimed: %s\n",
                         path.c_str(), e.what());
          }
        }
      });
    }
    heap::register_heap(pg->base(), alloc.get());
    registered = true;
  }

  // manager::refresh: the region moved to the newest watermark (pages whose copy changed
  // dropped), then the root record, the allocator and the object directory of that watermark
  // attached in place of the old ones. A failure after the region moved leaves nothing to
  // read consistently: the manager is broken (every later call throws the failure).
  // `max_epoch`: two_phase::refresh's limit (nullopt: the store's own).
  std::uint64_t refresh(std::optional<std::uint64_t> max_epoch = std::nullopt) {
    if (!ro) {
      throw error(errc::invalid_argument, path, "refresh",
                  "a read-write manager is always at its newest watermark (refresh is for read-only ones)");
    }
    const refresh_result r = max_epoch ? pg->refresh_to(*max_epoch) : pg->refresh();  // throws before anything moved
    if (!r.moved) return r.epoch;
    try {
      heap::root_record next = heap::root_record::decode(pg->store().root(), path);
      if (next.mmap_open || next.capacity != pg->store().capacity()) {
        throw error(errc::corrupt, path, "refresh",
                    "the root record of epoch " + std::to_string(r.epoch) +
                        (next.mmap_open ? " says the datastore is mapped by the mmap backend"
                                        : " names another capacity than the store's"));
      }
      if (registered) heap::unregister_heap(pg->base());
      registered = false;
      dir.reset();
      alloc.reset();
      {
        std::lock_guard g(root_mutex);
        root = std::move(next);
      }
      attach(true);
    } catch (const error& e) {
      broken.emplace(e);
      throw;
    }
    return r.epoch;
  }

  enum class ending { flush, close, prepare };
  std::uint64_t flush() {
    if (participant) {
      throw error(errc::invalid_argument, path, "flush",
                  "this datastore is one participant of a distributed commit: flush it with the "
                  "collective flush (pheap::mpi), which prepares and confirms");
    }
    return commit(ending::flush);
  }

  // The root record as committed by a clean close / a snapshot (never carries the mmap mark).
  std::vector<std::byte> clean_root() {
    std::lock_guard g(root_mutex);
    heap::root_record r = root;
    r.writer_version = library_version;
    r.mmap_open = false;
    return r.encode();
  }

  // flush(), the final flush of a read-write close, or a two-phase prepare.
  std::uint64_t commit(ending how) {
    const char* op = how == ending::prepare ? "prepare" : "flush";
    if (ro) throw error(errc::read_only, path, op, "the datastore is open read-only");
    heap::world_lock::exclusive w(alloc->world());
    alloc->drain_caches();
#ifndef NDEBUG
    // Debug builds verify every invariant before committing, so a bug never becomes durable.
    std::vector<std::string> problems;
    alloc->check(problems);
    dir->check(problems);
    if (!problems.empty()) {
      throw error(errc::corrupt, path, op,
                  "heap invariant violated, not committing: " + problems.front() + " (" +
                      std::to_string(problems.size()) + " problem(s))");
    }
#endif
    std::vector<std::byte> blob;
    {
      std::lock_guard g(root_mutex);
      root.writer_version = library_version;
      heap::root_record r = root;
      r.mmap_open = false;
      blob = r.encode();
    }
    switch (how) {
      case ending::close: return pg->close(blob);
      case ending::prepare: return pg->prepare(blob);
      case ending::flush: break;
    }
    return pg->flush(blob);
  }

  ~manager_core() {
    if (registered) heap::unregister_heap(pg->base());
    dir.reset();
    alloc.reset();
    pg.reset();
  }
};

}  // namespace detail

namespace {

store_options store_opts(const options& opt, bool ro) {
  store_options so;
  so.capacity = opt.capacity;
  so.page_size = opt.page_size;
  so.segment_size = opt.segment_size;
  so.read_only = ro;
  so.engine = opt.engine;
  so.page_cache_reads = ro && opt.read_only_cache && opt.backend == backend_kind::uffd;
  so.pin_limit = opt.pin_limit;
  // The kernel-mmap backend maps the segment files: a read-only mapping keeps writers out
  // (sparse_store/FORMAT.md "Direct mapping").
  so.beside_writer = opt.backend == backend_kind::uffd;
  return so;
}

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
}

void check_description(const std::string& path, const std::string& text) {
  if (text.size() > heap::root_record::max_description) {
    throw error(errc::invalid_argument, path, "set_description",
                "description is " + std::to_string(text.size()) + " bytes (maximum " +
                    std::to_string(heap::root_record::max_description) + ")");
  }
}

// Of a read-only store's heap, the bytes in use (metadata and every chunk ever used), read
// from its header in page 0 before anything is mapped; 0 (map it all) when page 0 holds no
// data or no valid header, or cannot be read: the attach then reports why, as without this.
std::uint64_t read_only_extent(sparse_store& store) {
  if (!store.may_have_data(0)) return 0;
  const std::size_t ps = store.page_size();
  const std::unique_ptr<std::byte, decltype(&std::free)> buf(
      static_cast<std::byte*>(std::aligned_alloc(4096, (ps + 4095) / 4096 * 4096)), &std::free);
  if (!buf) return 0;
  try {
    const page_read r{0, buf.get()};
    store.read_pages(std::span(&r, 1));
  } catch (const error&) {
    return 0;
  }
  return heap::segment_allocator::used_extent_of(buf.get(), ps, store.capacity());
}

// The backend region for an opened (validated) store. The mmap backend first commits the
// root marked "open by the mmap backend" (read-write only). A read-only pager maps only the
// part of the heap in use (pager_options::read_only_map_bytes), not the whole capacity.
std::unique_ptr<heap::region> make_region(std::unique_ptr<sparse_store> store, const std::string& path,
                                          const options& opt, bool ro, const heap::root_record& root) {
  if (opt.backend == backend_kind::mmap) {
    heap::root_record marked = root;
    marked.writer_version = library_version;
    marked.mmap_open = true;
    return heap::make_mmap_region(std::move(store), path, store_opts(opt, ro), marked.encode(), opt.mmap_advice);
  }
  pager_options po = opt.pager;
  if (ro && po.read_only_map_bytes == 0) po.read_only_map_bytes = read_only_extent(*store);
  return heap::make_pager_region(std::move(store), po);
}

// The heap of the opened (validated) store `store`: its root record checked before anything
// is mapped, then the backend region and the allocator.
std::unique_ptr<detail::manager_core> attach_core(std::unique_ptr<sparse_store> store,
                                                  const std::string& path, const options& opt,
                                                  bool ro) {
  auto c = std::make_unique<detail::manager_core>();
  c->path = path;
  c->ro = ro;
  c->root = heap::root_record::decode(store->root(), path);
  if (c->root.mmap_open) {
    throw error(errc::corrupt, path, "open heap",
                "the datastore was open read-write with the mmap backend and not closed cleanly "
                "(crash or kill): its segment files may hold a torn mix of states; restore it from "
                "a snapshot or copy");
  }
  if (c->root.capacity != store->capacity()) {
    throw error(errc::corrupt, path, "open heap",
                "root record capacity " + std::to_string(c->root.capacity) +
                    " differs from the store's " + std::to_string(store->capacity()));
  }
  c->pg = make_region(std::move(store), path, opt, ro, c->root);
  c->attach();
  return c;
}

// max_epoch: the highest store epoch the caller accepts (store_options::max_epoch).
std::unique_ptr<detail::manager_core> open_core(const std::string& path, const options& opt, bool ro,
                                                std::uint64_t max_epoch = ~std::uint64_t{0}) {
  store_options so = store_opts(opt, ro);
  so.max_epoch = max_epoch;
  return attach_core(sparse_store::open(path, so), path, opt, ro);
}

// A new heap over the epoch-0 store `store` (in its creation directory), formatted and
// flushed: its first watermark holds the heap root. Known to the user as `path`.
std::unique_ptr<detail::manager_core> format_core(std::unique_ptr<sparse_store> store,
                                                  const std::string& path, const options& o) {
  auto c = std::make_unique<detail::manager_core>();
  c->path = path;
  c->root.heap_format = heap::heap_format_version;
  c->root.writer_version = library_version;
  c->root.capacity = store->capacity();
  c->root.chunk_size = o.chunk_size;
  c->root.created_ns = now_ns();
  c->root.description = o.description;
  c->pg = make_region(std::move(store), path, o, false, c->root);
  heap::segment_allocator::format(c->pg->base(), c->pg->size(), o.chunk_size);
  c->attach();
  c->flush();
  return c;
}

// `e`, thrown by a step of a creation in the directory `tmp`, told as of `path`: the user
// knows the datastore by its name, not by the temporary one it is built under (nor its files).
error named_after(const error& e, const std::string& tmp, const std::string& path) {
  auto retold = [&](std::string s) {
    for (auto at = s.find(tmp); at != std::string::npos; at = s.find(tmp, at + path.size())) {
      s.replace(at, tmp.size(), path);
    }
    return s;
  };
  const std::string what = e.what();
  const std::string head = "pheap: " + e.op() + (e.path().empty() ? "" : " " + e.path()) + ": ";
  const std::string cause = what.compare(0, head.size(), head) == 0 ? what.substr(head.size()) : what;
  return error(e.code(), retold(e.path()), retold(e.op()), retold(cause), e.sys_errno());
}

}  // namespace

manager::manager(create_only_t, const std::string& path, const options& opt)
    : manager(create_only, path, opt, nullptr) {}

// FORMAT.md "Creation" with the heap's steps before the publication: the epoch-0 store is
// written into the creation directory, the heap formatted and flushed there (and `init` run
// and flushed), the heap closed, and only then is the directory renamed to `path` — a kill
// before the rename leaves nothing at `path` (the leftover is removed by the next creation of
// the name), after it a datastore whose watermark holds the heap root. The store's
// datastore lock is held from the epoch-0 write to the reopen at `path`, so nobody opens the
// datastore before this manager has it. A failure before the rename removes the creation
// directory; after it the datastore is taken back out (store_creation::take_back): a thrown
// create leaves `path` as it was, through the engine, like every other byte.
manager::manager(create_only_t, const std::string& path, const options& opt,
                 const std::function<void(manager&)>& init) {
  if (opt.capacity == 0) throw error(errc::invalid_argument, path, "create", "capacity is zero");
  check_description(path, opt.description);
  options o = opt;
  if (o.page_size == 0) throw error(errc::invalid_argument, path, "create", "page size is zero");
  o.capacity = (opt.capacity + o.page_size - 1) / o.page_size * o.page_size;
  heap::segment_allocator::compute_layout(o.capacity, o.chunk_size);  // validate before touching disk

  const store_options so = store_opts(o, false);
  store_creation creation = store_creation::make(path, "create", o.engine);
  try {
    creation.write_store(so);
    manager m(format_core(creation.open_store(so), path, o));
    try {
      if (init) {
        init(m);
        m.flush();
      }
      // Closed before the rename (the store's files are named after the creation directory):
      // a clean close whose failure is this create's, not the destructor's report.
      m.core().commit(detail::manager_core::ending::close);
    } catch (...) {
      m.core_.reset();  // nothing more is committed into a creation that is being removed
      throw;
    }
    m.core_.reset();
  } catch (const error& e) {
    throw named_after(e, creation.path(), path);
  }
  std::unique_ptr<sparse_store> store;
  try {
    store = creation.publish();
  } catch (const error& e) {
    throw named_after(e, creation.path(), path);
  }
  try {
    core_ = attach_core(std::move(store), path, o, false);
  } catch (...) {
    creation.take_back();
    throw;
  }
}

manager::manager(open_only_t, const std::string& path, const options& opt)
    : core_(open_core(path, opt, false)) {}

manager::manager(open_read_only_t, const std::string& path, const options& opt)
    : core_(open_core(path, opt, true)) {}

manager::manager(std::unique_ptr<detail::manager_core> core) : core_(std::move(core)) {}

manager::~manager() {
  if (!core_) return;
  if (!core_->ro && !core_->participant) {
    try {
      core_->commit(detail::manager_core::ending::close);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "pheap: close %s: final flush failed, datastore stays at its previous watermark: %s\n",
                   core_->path.c_str(), e.what());
    }
  }
  core_.reset();
}

manager::manager(manager&&) noexcept = default;

manager& manager::operator=(manager&& other) noexcept {
  if (this != &other) {
    manager dying(std::move(*this));
    core_ = std::move(other.core_);
  }
  return *this;
}

detail::manager_core& manager::core() const {
  if (!core_) throw error(errc::invalid_argument, "", "manager", "use of a moved-from manager");
  if (core_->broken) throw *core_->broken;
  return *core_;
}

// ---- objects -------------------------------------------------------------------------------

detail::construct_result manager::priv_construct(instance_kind kind, std::string_view name,
                                                 const type_identity& type, std::size_t n,
                                                 bool find_existing, detail::init_fn init, void* ctx) {
  return core().dir->construct(kind, name, type, n, find_existing, init, ctx);
}

std::pair<void*, std::size_t> manager::priv_find(instance_kind kind, std::string_view name,
                                                 const type_identity& type) const {
  return core().dir->find(kind, name, type);
}

bool manager::priv_destroy(instance_kind kind, std::string_view name, const type_identity& type,
                           detail::destroy_fn dtor) {
  return core().dir->destroy(kind, name, type, dtor);
}

void manager::priv_destroy_ptr(const void* p, const type_identity& type, detail::destroy_fn dtor) {
  core().dir->destroy_ptr(p, type, dtor);
}

object_info manager::priv_info(const void* p) const { return core().dir->info(p); }

std::optional<object_info> manager::find_info(std::string_view name) const {
  return core().dir->find_info(instance_kind::named_kind, name);
}

void manager::priv_set_description(const void* p, std::string_view text) {
  core().dir->set_description(p, text);
}

const void* manager::priv_anchor() const { return core().pg->base(); }

std::uint64_t manager::priv_next(instance_kind kind, std::uint64_t slot) const {
  return core().dir->next_entry(kind, slot);
}

object_info manager::priv_entry(std::uint64_t slot) const { return core().dir->entry_info(slot); }

manager::size_type manager::get_num_named_objects() const {
  return core().dir->count(instance_kind::named_kind);
}
manager::size_type manager::get_num_unique_objects() const {
  return core().dir->count(instance_kind::unique_kind);
}
manager::size_type manager::get_num_anonymous_objects() const {
  return core().dir->count(instance_kind::anonymous_kind);
}

object_iterator manager::named_begin() const {
  return {this, instance_kind::named_kind, priv_next(instance_kind::named_kind, 0)};
}
object_iterator manager::named_end() const {
  return {this, instance_kind::named_kind, core().dir->table_capacity()};
}
object_iterator manager::unique_begin() const {
  return {this, instance_kind::unique_kind, priv_next(instance_kind::unique_kind, 0)};
}
object_iterator manager::unique_end() const {
  return {this, instance_kind::unique_kind, core().dir->table_capacity()};
}
object_iterator manager::anonymous_begin() const {
  return {this, instance_kind::anonymous_kind, priv_next(instance_kind::anonymous_kind, 0)};
}
object_iterator manager::anonymous_end() const {
  return {this, instance_kind::anonymous_kind, core().dir->table_capacity()};
}

object_info object_iterator::operator*() const { return m_->priv_entry(slot_); }
object_iterator& object_iterator::operator++() {
  slot_ = m_->priv_next(kind_, slot_ + 1);
  return *this;
}

// ---- raw memory ----------------------------------------------------------------------------

void* manager::allocate(size_type n) {
  auto& c = core();
  const std::uint64_t off = c.alloc->allocate(n);
  return off ? c.pg->base() + off : nullptr;
}

void* manager::allocate_aligned(size_type n, size_type align) {
  auto& c = core();
  const std::uint64_t off = c.alloc->allocate_aligned(n, align);
  return off ? c.pg->base() + off : nullptr;
}

void manager::deallocate(void* p) {
  if (p == nullptr) return;
  auto& c = core();
  const auto* b = static_cast<std::byte*>(p);
  if (b < c.pg->base() || b >= c.pg->base() + c.pg->size()) {
    throw error(errc::invalid_argument, c.path, "deallocate", "pointer is not inside this heap");
  }
  c.alloc->deallocate(static_cast<std::uint64_t>(b - c.pg->base()));
}

bool manager::all_memory_deallocated() const { return core().alloc->all_memory_deallocated(); }

// ---- durability ----------------------------------------------------------------------------

std::uint64_t manager::flush() { return core().flush(); }

std::uint64_t manager::snapshot(const std::string& dst) {
  auto& c = core();
  if (c.ro || c.participant) {
    c.pg->store().snapshot(dst);
    return c.pg->store().epoch();
  }
  // The store copies its last commit while writers continue (no heap lock is held during
  // the copy). If another thread flushes in between, the snapshot holds that later watermark.
  const std::uint64_t e = c.flush();
  c.pg->snapshot(dst, c.clean_root());
  return e;
}

bool manager::consistent(const std::string& path) noexcept {
  try {
    store_options so;
    so.read_only = true;
    auto store = sparse_store::open(path, so);
    const auto root = heap::root_record::decode(store->root(), path);
    return !root.mmap_open && root.capacity == store->capacity() &&
           heap::segment_allocator::compute_layout(root.capacity, root.chunk_size).num_chunks > 0;
  } catch (...) {
    return false;
  }
}

bool manager::consistent() const noexcept {
  try {
    return core_ && core_->pg->stats().poisoned_pages == 0;
  } catch (...) {
    return false;
  }
}

watermark_info manager::peek(const std::string& path) {
  store_peek p = sparse_store::peek(path);
  const heap::root_record r = heap::root_record::decode(p.root, path);
  watermark_info w;
  w.epoch = p.epoch;
  w.uuid = to_string(p.id);
  w.store_format = p.format_version;
  w.writer_version = r.writer_version;
  w.capacity = r.capacity;
  w.page_size = p.page_size;
  w.chunk_size = r.chunk_size;
  w.created_ns = r.created_ns;
  w.disk_bytes = p.disk_bytes;
  w.description = r.description;
  return w;
}

std::string version_string(std::uint32_t v) {
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

std::string utc_time_string(std::uint64_t ns) {
  const std::time_t t = static_cast<std::time_t>(ns / 1000000000);
  std::tm tm{};
  char b[64];
  gmtime_r(&t, &tm);
  std::strftime(b, sizeof b, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return b;
}

watermark_info manager::watermark() const {
  const manager_stats s = stats();
  watermark_info w;
  w.epoch = s.epoch;
  w.uuid = get_uuid();
  // The datastore's own (a format-3 one opens read-only as it is), from its superblock: only
  // an upgrade changes it, which nobody does while this manager has the datastore open.
  w.store_format = sparse_store::peek(core().path).format_version;
  w.capacity = s.capacity;
  w.page_size = s.page_size;
  w.chunk_size = s.chunk_size;
  w.disk_bytes = s.disk_bytes;
  std::lock_guard g(core().root_mutex);
  w.writer_version = core_->root.writer_version;
  w.created_ns = core_->root.created_ns;
  w.description = core_->root.description;
  return w;
}

void manager::copy(const std::string& src, const std::string& dst) {
  store_options so;
  so.read_only = true;
  auto store = sparse_store::open(src, so);
  heap::root_record::decode(store->root(), src);  // refuse to copy a non-heap store
  store->snapshot(dst);
}

void manager::remove(const std::string& path) { sparse_store::remove(path); }

std::string manager::get_uuid() const { return to_string(core().pg->store().id()); }

std::string manager::get_uuid(const std::string& path) {
  store_options so;
  so.read_only = true;
  return to_string(sparse_store::open(path, so)->id());
}

std::uint32_t manager::get_version() const {
  std::lock_guard g(core().root_mutex);
  return core_->root.writer_version;
}

std::uint32_t manager::get_version(const std::string& path) {
  store_options so;
  so.read_only = true;
  auto store = sparse_store::open(path, so);
  return heap::root_record::decode(store->root(), path).writer_version;
}

void manager::set_description(const std::string& text) {
  auto& c = core();
  if (c.ro) throw error(errc::read_only, c.path, "set_description", "the datastore is open read-only");
  check_description(c.path, text);
  std::lock_guard g(c.root_mutex);
  c.root.description = text;
}

void manager::set_description(const std::string& path, const std::string& text) {
  check_description(path, text);
  manager m(open_only, path);
  m.set_description(text);
  m.flush();
}

std::string manager::get_description() const {
  std::lock_guard g(core().root_mutex);
  return core_->root.description;
}

std::string manager::get_description(const std::string& path) {
  store_options so;
  so.read_only = true;
  auto store = sparse_store::open(path, so);
  return heap::root_record::decode(store->root(), path).description;
}

bool manager::read_only() const noexcept { return core_ && core_->ro; }
const std::string& manager::path() const noexcept {
  static const std::string empty;
  return core_ ? core_->path : empty;
}
void* manager::get_address() const noexcept { return core_ ? core_->pg->base() : nullptr; }
manager::size_type manager::get_size() const noexcept {
  return core_ ? core_->pg->store().capacity() : 0;
}
std::uint64_t manager::epoch() const { return core().pg->store().epoch(); }

std::uint64_t manager::refresh() { return core().refresh(); }

// Heap addresses to runs of whole pages (region offsets), sorted and merged: a plan of many
// small ranges (one per adjacency list) asks for each page once. Parts outside the heap are cut.
void manager::prefetch(std::span<const memory_range> ranges) const {
  heap::region& rg = *core().pg;
  const auto base = reinterpret_cast<std::uintptr_t>(rg.base());
  const std::uintptr_t end = base + rg.size();
  const std::size_t ps = rg.page_size();
  std::vector<std::pair<std::size_t, std::size_t>> pages;  // [first, end) page numbers
  pages.reserve(ranges.size());
  for (const auto& [p, len] : ranges) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    if (len == 0 || a >= end) continue;
    const std::uintptr_t lo = std::max(a, base), hi = len > end - a ? end : a + len;
    if (lo < hi) pages.emplace_back((lo - base) / ps, (hi - base + ps - 1) / ps);
  }
  std::sort(pages.begin(), pages.end());
  std::vector<std::pair<std::size_t, std::size_t>> offs;  // (offset, length) for the region
  for (const auto& [first, last] : pages) {
    if (!offs.empty() && first * ps <= offs.back().first + offs.back().second) {
      offs.back().second = std::max(offs.back().second, last * ps - offs.back().first);
    } else {
      offs.emplace_back(first * ps, (last - first) * ps);
    }
  }
  if (!offs.empty()) rg.prefetch(offs);
}

void manager::prefetch_all() const {
  auto& c = core();
  const std::pair<std::size_t, std::size_t> all{0, static_cast<std::size_t>(
                                                       std::min<std::uint64_t>(c.alloc->used_extent(), c.pg->size()))};
  c.pg->prefetch_stored(std::span(&all, 1));
}

manager_stats manager::stats() const {
  auto& c = core();
  manager_stats s;
  const heap::allocator_usage u = c.alloc->usage();
  s.epoch = c.pg->store().epoch();
  s.capacity = c.pg->store().capacity();
  s.page_size = c.pg->page_size();
  s.chunk_size = u.chunk_size;
  s.num_chunks = u.num_chunks;
  s.chunks_in_use = u.chunks_in_use;
  s.small_bytes = u.small_bytes;
  s.large_bytes = u.large_bytes;
  s.cached_objects = u.cached_objects;
  s.named_objects = c.dir->count(instance_kind::named_kind);
  s.unique_objects = c.dir->count(instance_kind::unique_kind);
  s.anonymous_objects = c.dir->count(instance_kind::anonymous_kind);
  s.disk_bytes = c.pg->store().disk_bytes();
  s.tracking = c.pg->tracking();
  s.backend = c.pg->backend();
  s.pager = c.pg->stats();
  s.store = c.pg->store().stats();
  return s;
}

std::vector<std::string> manager::check() const {
  auto& c = core();
  std::vector<std::string> problems;
  auto run = [&] {
    c.alloc->check(problems);
    c.dir->check(problems);
  };
  if (c.ro) {
    run();
  } else {
    heap::world_lock::exclusive w(c.alloc->world());
    run();
  }
  return problems;
}

// ---- two-phase commit (pheap/two_phase.hpp) --------------------------------------------------

namespace {
void require_uffd(const std::string& path, const options& opt, const char* op) {
  if (opt.backend != backend_kind::uffd) {
    throw error(errc::unavailable, path, op,
                std::string("a participant of a distributed commit needs the uffd backend, not ") +
                    to_string(opt.backend));
  }
}
}  // namespace

manager two_phase::create(const std::string& path, const options& opt) {
  require_uffd(path, opt, "create");
  manager m(create_only, path, opt);
  m.core_->participant = true;
  return m;
}

manager two_phase::open(const std::string& path, std::uint64_t max_epoch, bool read_only,
                        const options& opt) {
  require_uffd(path, opt, "open");
  auto c = open_core(path, opt, read_only, max_epoch);
  c->participant = true;
  return manager(std::move(c));
}

std::uint64_t two_phase::prepare(manager& m) {
  return m.core().commit(detail::manager_core::ending::prepare);
}

std::uint64_t two_phase::confirm(manager& m) {
  auto& c = m.core();
  if (c.ro) throw error(errc::read_only, c.path, "confirm", "the datastore is open read-only");
  return c.pg->confirm();
}

bool two_phase::prepared(const manager& m) { return m.core().pg->store().prepared(); }

std::uint64_t two_phase::refresh(manager& m, std::uint64_t max_epoch) { return m.core().refresh(max_epoch); }

}  // namespace pheap
