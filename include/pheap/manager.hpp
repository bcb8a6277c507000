// pheap/manager.hpp — a persistent heap in a datastore directory: the API users write against.
//
// Shaped after metall::manager / boost::interprocess::managed_mapped_file, so a Metall user
// switches by changing the namespace and the type name.
//
//   pheap::manager m(pheap::create_only, "/data/g1");           // or open_only / open_read_only
//   auto* v = m.construct<vec_t>("edges")(m.get_allocator<>());  // named object
//   v->push_back(42);
//   m.flush();                                                    // durable watermark
//   // ... later, in another process, at another address:
//   pheap::manager r(pheap::open_read_only, "/data/g1");
//   auto [p, n] = r.find<vec_t>("edges");
//
// Durability: everything written to the heap (objects, allocator metadata, the object
// directory, the description) becomes durable atomically at flush(); the destructor flushes.
// After a crash the datastore opens at the last completed flush — never a mix of two.
// Writes that race with a flush() land in that watermark or the next.
//
// Threads: every member is thread-safe except iteration (named_begin/...), which must not run
// concurrently with construct/destroy, and the move operations. flush() waits for heap
// operations in progress (including constructors run by construct<T>) and briefly stops new
// slow-path allocations; cached small allocations continue during a flush.
//
// Processes: one read-write opener per datastore (flock; a second one throws
// pheap::error(errc::locked)), and any number of read-only openers, also while the writer
// runs (uffd backend, store format 4: sparse_store/FORMAT.md "Readers beside a writer"): a
// read-only manager reads exactly the watermark that was the last one when it opened — never
// a write the writer has not flushed, never a mix of two watermarks — for as long as it stays
// open, until refresh() moves it to the newest one. The writer keeps copies of what it
// overwrites for the readers' watermarks, up to options::pin_limit (PHEAP_PIN_LIMIT, 4 GiB):
// past it the oldest reader is released, and its next read of a page it had not read yet is
// errc::stale (inside pheap::guard_faults; outside one the process dies of SIGBUS after one
// line on stderr naming the datastore, the page and "released by the writer"), never a wrong
// byte; refresh() or a reopen reads again. stats().store says who reads (readers,
// oldest_reader_epoch, pinned_bytes, pin_limit, readers_expired). The mmap backend cannot
// serve readers beside a writer: its read-only opens take the datastore's shared flock (no
// writer opens meanwhile, errc::locked), and its read-write opens are refused while readers
// are attached. A child created by fork() does not inherit the mapping (see pheap/pager.hpp):
// open the datastore again in the child.
//
// Errors: pheap::error (pheap/error.hpp) naming the datastore, the operation and the cause:
//   open of a missing path -> not_found; of a directory that is not a datastore, or whose heap
//   was never initialised (creation interrupted) -> not_a_datastore; newer heap or store
//   format -> newer_format; damaged metadata -> corrupt; create on an existing path ->
//   already_exists; bad options (zero capacity, chunk size not a power of two) ->
//   invalid_argument; any mutation through a read-only manager -> read_only (a plain store
//   into its memory is SIGSEGV, see the constructor); find<T>() of an
//   object of another type -> type_mismatch naming both types.
//   Capacity exhausted: allocate()/allocate_aligned() return nullptr; construct/find_or_construct
//   and pheap::allocator throw std::bad_alloc. Never a crash.
//
// Caveats:
//   * construct() returns nullptr when the name already exists (Metall behaviour), it does not
//     throw. Names are byte strings compared exactly; the empty name is rejected.
//   * Alignment: at most 4096 bytes (objects and allocate_aligned); larger -> nullptr /
//     invalid_argument.
//   * The proxies returned by construct<T>(name) keep a view of `name`: call them in the same
//     expression (m.construct<T>("x")(args...)).
//   * A constructor run by construct<T> must not call flush() (-> invalid_argument) and must
//     not wait for another thread that allocates from this heap while a flush is pending.
//   * Raw pointers into the heap are valid only while this manager is open; store
//     boost::interprocess::offset_ptr (or offsets) inside the heap.
//   * Type identity is pheap::type_name<T>() + sizeof + alignof (pheap/type_name.hpp).
//   * construct<T> and its variants refuse at compile time types that cannot survive a
//     reopen: std::allocator containers (std::vector, std::string, ...), raw pointers,
//     references, smart pointers (pheap/persistable.hpp lists the rules, what they cannot see
//     — members of your own structs — and how to override them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "pheap/allocator.hpp"
#include "pheap/error.hpp"
#include "pheap/object_info.hpp"
#include "pheap/options.hpp"
#include "pheap/persistable.hpp"
#include "pheap/stats.hpp"
#include "pheap/type_name.hpp"

namespace pheap {

struct create_only_t {};
struct open_only_t {};
struct open_read_only_t {};
struct unique_instance_t {};
struct anonymous_instance_t {};
inline constexpr create_only_t create_only{};
inline constexpr open_only_t open_only{};
inline constexpr open_read_only_t open_read_only{};
inline constexpr unique_instance_t unique_instance{};
inline constexpr anonymous_instance_t anonymous_instance{};

// The library version recorded by the writer of a datastore (MAJOR*10000 + MINOR*100 + PATCH).
inline constexpr std::uint32_t library_version = 100;  // 0.1.0

struct manager_stats {
  std::uint64_t epoch = 0;            // last committed watermark
  std::uint64_t capacity = 0;         // heap bytes
  std::uint64_t page_size = 0;
  std::uint64_t chunk_size = 0;
  std::uint64_t num_chunks = 0;
  std::uint64_t chunks_in_use = 0;
  std::uint64_t small_bytes = 0;      // bytes in allocated small slots (incl. cached free ones)
  std::uint64_t large_bytes = 0;      // bytes in large chunk runs
  std::uint64_t cached_objects = 0;   // free small slots in per-thread caches
  std::uint64_t named_objects = 0, unique_objects = 0, anonymous_objects = 0;
  std::uint64_t disk_bytes = 0;       // bytes allocated on disk by the datastore
  dirty_tracking tracking = dirty_tracking::automatic;  // automatic with the mmap backend
  backend_kind backend = backend_kind::uffd;
  pager_stats pager;                  // all zero with the mmap backend
  store_stats store;
};

// What the last committed watermark of a datastore records, read without the datastore's lock
// (manager::peek): from the store's superblock and the heap's root record only.
struct watermark_info {
  std::uint64_t epoch = 0;
  std::string uuid;
  std::uint32_t store_format = 0;
  std::uint32_t writer_version = 0;  // library_version of the writer of that watermark
  std::uint64_t capacity = 0;
  std::uint64_t page_size = 0;
  std::uint64_t chunk_size = 0;
  std::uint64_t created_ns = 0;      // creation time, ns since the Unix epoch
  std::uint64_t disk_bytes = 0;      // allocated by the datastore's files, now
  std::string description;
};

// "0.1.0" for a library_version / watermark_info::writer_version value.
std::string version_string(std::uint32_t version);
// "2026-12-01 11:28:08 UTC" for a time in ns since the Unix epoch (watermark_info::created_ns).
std::string utc_time_string(std::uint64_t ns);

namespace detail {
class manager_core;
}

class manager;
class two_phase;  // pheap/two_phase.hpp

// Iterates named, unique or anonymous objects; see manager::named_begin. Invalidated by
// construct/destroy.
class object_iterator {
 public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = object_info;
  using difference_type = std::ptrdiff_t;
  using pointer = void;
  using reference = object_info;

  object_iterator() = default;
  object_info operator*() const;
  object_iterator& operator++();
  object_iterator operator++(int) {
    object_iterator t = *this;
    ++*this;
    return t;
  }
  bool operator==(const object_iterator& o) const noexcept { return slot_ == o.slot_ && m_ == o.m_; }

 private:
  friend class manager;
  object_iterator(const manager* m, instance_kind k, std::uint64_t slot) : m_(m), kind_(k), slot_(slot) {}
  const manager* m_ = nullptr;
  instance_kind kind_ = instance_kind::named_kind;
  std::uint64_t slot_ = 0;
};

class manager {
 public:
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  template <class T>
  using allocator_type = pheap::allocator<T>;
  using const_named_iterator = object_iterator;
  using const_unique_iterator = object_iterator;
  using const_anonymous_iterator = object_iterator;

  // Without `opt`, the constructors use options::from_env(): the library's defaults with the
  // PHEAP_* variables applied (a malformed one throws error(invalid_argument) naming it). With
  // `opt`, exactly `opt`: no variable is read (pheap/options.hpp).
  //
  // Creates a datastore at `path` (must not exist, or be an empty directory). It is built
  // under a temporary name next to `path` (sparse_store/FORMAT.md "Creation") and appears
  // under its name only once its first watermark holds the formatted heap: a kill at any
  // point leaves no datastore at `path` or that complete one, and a failed create leaves
  // nothing behind. Errors name `path`, never the temporary name.
  manager(create_only_t, const std::string& path, const options& opt = options::from_env());
  // The same, with `init(m)` run on the new heap and flushed before the datastore appears
  // under its name: its first watermark already holds what `init` made (pheap-graph's empty
  // graph). A throw from `init` leaves nothing at `path`. `m.path()` is `path` meanwhile, but
  // `init` must not open `path` or hand `m` out: `m` is closed when `init` returns.
  manager(create_only_t, const std::string& path, const options& opt,
          const std::function<void(manager&)>& init);
  // Opens for reading and writing (exclusive across processes).
  manager(open_only_t, const std::string& path, const options& opt = options::from_env());
  // Opens for reading only (shared); every mutation through the manager (construct, destroy,
  // allocate, flush, set_description, a pheap::allocator of it) throws error(read_only). The
  // heap itself is mapped read-only: a store through a pointer into it is SIGSEGV, announced
  // by one line on stderr naming the datastore and the address (pheap/fault_guard.hpp).
  manager(open_read_only_t, const std::string& path, const options& opt = options::from_env());
  // Flushes (read-write) and closes. A close with nothing dirty since the last flush() (no
  // page written, no object created or destroyed) writes nothing: the datastore ends at the
  // epoch that flush() returned (uffd backend; the mmap backend always commits its clean
  // close; with dirty_tracking::all_resident every resident page counts as dirty). Never
  // throws: a failing final flush is reported on stderr and the datastore stays at its
  // previous watermark.
  ~manager();
  manager(manager&&) noexcept;
  manager& operator=(manager&&) noexcept;
  manager(const manager&) = delete;
  manager& operator=(const manager&) = delete;

  // ---- object construction ---------------------------------------------------------------
  template <class T, bool FindExisting>
  class construct_proxy;
  template <class T, bool FindExisting>
  class construct_iter_proxy;

  template <class T>
  construct_proxy<T, false> construct(std::string_view name) {
    return {this, instance_kind::named_kind, name};
  }
  template <class T>
  construct_proxy<T, false> construct(unique_instance_t) {
    return {this, instance_kind::unique_kind, type_name<T>()};
  }
  template <class T>
  construct_proxy<T, false> construct(anonymous_instance_t) {
    return {this, instance_kind::anonymous_kind, {}};
  }
  template <class T>
  construct_proxy<T, true> find_or_construct(std::string_view name) {
    return {this, instance_kind::named_kind, name};
  }
  template <class T>
  construct_proxy<T, true> find_or_construct(unique_instance_t) {
    return {this, instance_kind::unique_kind, type_name<T>()};
  }
  template <class T>
  construct_iter_proxy<T, false> construct_it(std::string_view name) {
    return {this, instance_kind::named_kind, name};
  }
  template <class T>
  construct_iter_proxy<T, false> construct_it(unique_instance_t) {
    return {this, instance_kind::unique_kind, type_name<T>()};
  }
  template <class T>
  construct_iter_proxy<T, false> construct_it(anonymous_instance_t) {
    return {this, instance_kind::anonymous_kind, {}};
  }
  template <class T>
  construct_iter_proxy<T, true> find_or_construct_it(std::string_view name) {
    return {this, instance_kind::named_kind, name};
  }

  // {pointer, length} or {nullptr, 0}. error(type_mismatch) if the object has another type.
  template <class T>
  std::pair<T*, size_type> find(std::string_view name) const {
    auto r = priv_find(instance_kind::named_kind, name, type_identity::of<T>());
    return {static_cast<T*>(r.first), r.second};
  }
  template <class T>
  std::pair<T*, size_type> find(unique_instance_t) const {
    auto r = priv_find(instance_kind::unique_kind, type_name<T>(), type_identity::of<T>());
    return {static_cast<T*>(r.first), r.second};
  }

  // The directory entry of the named object `name` whatever its type (its recorded type name,
  // size, length and address: what a caller without the C++ type — the C API, the Python
  // package — needs), or nullopt. One look-up; never type_mismatch.
  std::optional<object_info> find_info(std::string_view name) const;

  // Runs the destructors and frees; false if absent. error(type_mismatch) if another type.
  template <class T>
  bool destroy(std::string_view name) {
    return priv_destroy(instance_kind::named_kind, name, type_identity::of<T>(), &destroy_n<T>);
  }
  template <class T>
  bool destroy(unique_instance_t) {
    return priv_destroy(instance_kind::unique_kind, type_name<T>(), type_identity::of<T>(), &destroy_n<T>);
  }
  // Any kind; p must come from construct/find. error(invalid_argument) otherwise.
  template <class T>
  bool destroy_ptr(const T* p) {
    if (p == nullptr) return false;
    priv_destroy_ptr(p, type_identity::of<T>(), &destroy_n<T>);
    return true;
  }

  // ---- instance queries (p from construct/find; error(invalid_argument) otherwise) --------
  template <class T>
  std::string_view get_instance_name(const T* p) const { return priv_info(p).name; }
  template <class T>
  instance_kind get_instance_kind(const T* p) const { return priv_info(p).kind; }
  template <class T>
  size_type get_instance_length(const T* p) const { return priv_info(p).length; }
  template <class T>
  bool is_instance_type(const void* p) const {
    const object_info i = priv_info(p);
    const type_identity t = type_identity::of<T>();
    return i.type_name == t.name && i.type_size == t.size && i.type_align == t.align;
  }
  template <class T>
  object_info get_instance_info(const T* p) const { return priv_info(p); }
  // False if the object has no description (Metall signature).
  template <class T>
  bool get_instance_description(const T* p, std::string* out) const {
    const object_info i = priv_info(p);
    if (out) out->assign(i.description);
    return !i.description.empty();
  }
  template <class T>
  void set_instance_description(const T* p, std::string_view text) { priv_set_description(p, text); }

  // ---- iteration and counts ---------------------------------------------------------------
  size_type get_num_named_objects() const;
  size_type get_num_unique_objects() const;
  size_type get_num_anonymous_objects() const;
  object_iterator named_begin() const;
  object_iterator named_end() const;
  object_iterator unique_begin() const;
  object_iterator unique_end() const;
  // Anonymous objects, in no particular order. Those constructed by pheap 0.1.0 (heap format
  // 1, which did not index them) are counted by get_num_anonymous_objects() but not listed.
  object_iterator anonymous_begin() const;
  object_iterator anonymous_end() const;

  // ---- raw memory -------------------------------------------------------------------------
  // nullptr when the heap is full. error(read_only) on read-only managers.
  void* allocate(size_type n);
  // align: power of two <= 4096, else nullptr.
  void* allocate_aligned(size_type n, size_type align);
  void deallocate(void* p);  // nullptr is ignored; error(invalid_argument) for foreign pointers
  bool all_memory_deallocated() const;

  template <class T = std::byte>
  allocator_type<T> get_allocator() const {
    return allocator_type<T>(priv_anchor());
  }

  // ---- durability and datastore management -----------------------------------------------
  // Makes everything written so far durable atomically; returns the new watermark (epoch).
  std::uint64_t flush();
  // Flushes, then writes an independent datastore at `dst` (must not exist) holding that
  // watermark (or a later one, if another thread flushed meanwhile); returns the flushed
  // epoch. Writers keep running during the copy. The snapshot gets a new UUID. Read-only
  // managers snapshot their last watermark without flushing.
  std::uint64_t snapshot(const std::string& dst);
  // True iff `path` is a datastore this library can open (store sound, heap initialised,
  // format supported). Never throws. A datastore that was not closed is still consistent:
  // it opens at its last watermark.
  static bool consistent(const std::string& path) noexcept;
  // False once this manager met damaged data: a page whose store read failed its checksum or
  // an I/O error (an access to it is SIGBUS, or an error inside pheap::guard_faults; see
  // pheap/fault_guard.hpp). Pages never read are not judged: `pheap check` reads them all.
  bool consistent() const noexcept;
  // The last watermark of `path` from its superblock and root record, WITHOUT taking the
  // datastore's lock: works while another process has it open for writing (its last flush).
  // Reads nothing of the heap itself (objects and usage need an open). Throws as an open does
  // for a missing, foreign or damaged datastore.
  static watermark_info peek(const std::string& path);
  // The same fields for this open manager: its last watermark (epoch), and usage now.
  watermark_info watermark() const;
  // Copies the last watermark of `src` to `dst` (sparse copy / reflink). Throws error; locked
  // if a writer holds `src`.
  static void copy(const std::string& src, const std::string& dst);
  // Deletes the datastore at `path`. Refuses (error not_a_datastore) a directory that is not
  // a datastore and (error locked) one another process has open.
  static void remove(const std::string& path);

  std::string get_uuid() const;
  static std::string get_uuid(const std::string& path);
  std::uint32_t get_version() const;  // library_version of the datastore's last writer
  static std::uint32_t get_version(const std::string& path);
  // Durable with the next flush() (the destructor flushes). <= 1800 bytes.
  void set_description(const std::string& text);
  static void set_description(const std::string& path, const std::string& text);
  std::string get_description() const;
  static std::string get_description(const std::string& path);

  bool read_only() const noexcept;
  const std::string& path() const noexcept;
  void* get_address() const noexcept;  // heap region base
  size_type get_size() const noexcept;  // heap capacity in bytes
  std::uint64_t epoch() const;
  manager_stats stats() const;

  // ---- readers beside a writer ---------------------------------------------------------------
  // Read-only managers (uffd backend): moves this manager to the datastore's newest watermark
  // without closing it, and returns the epoch it reads now (epoch() before the call: nothing
  // new). Pages whose copy did not change stay in memory — no store read when they are used
  // again —; those that changed are dropped and read from the new watermark at their next
  // access. Then the root record (description, versions), the allocator's header and the
  // object directory of the new watermark are read. Pages whose read failed (errc::stale
  // after the writer released this reader, an I/O error) are read again at their next access.
  // What stays valid:
  //   * get_address() and get_size(): the heap keeps its address. A read-only open reserves
  //     address space for the whole capacity, so the part the writer grew the heap into is
  //     there (under an RLIMIT_AS below the capacity it maps the part in use only; a refresh
  //     that finds the heap grown past it throws errc::unavailable and the manager is broken:
  //     every later call throws the same error; close it and open the datastore again).
  //   * Pointers, references and offset_ptrs into the heap stay addresses in it, but they
  //     read the NEW watermark's bytes: an object the writer did not touch reads as before;
  //     one it changed reads its new value (a container's elements may have moved: its
  //     iterators, element pointers and views are invalid); one it destroyed reads whatever
  //     is there now. Re-find every object with find()/find_info() after a refresh, and
  //     rebuild iterators and views from the re-found object. object_iterators are
  //     invalidated. get_allocator() results stay usable (they find the heap by address).
  //   * Other threads must not access the heap or call this manager during refresh(): the
  //     caller's to prevent (a read meanwhile may see either watermark, or a page of each).
  // Errors: errc::invalid_argument on a read-write manager, and on one that reads under the
  // datastore's shared flock (format 3: `pheap upgrade DIR`; no write access to
  // DIR/pheap.readers: reopen to see a newer watermark); errc::unavailable with the mmap
  // backend; the store's errors while it moves (nothing changed then). A failure after the move (the new watermark's heap damaged or grown past
  // the mapping) breaks the manager as above.
  std::uint64_t refresh();

  // ---- out of core -------------------------------------------------------------------------
  // A heap range the application is about to use: (address, length in bytes).
  using memory_range = std::pair<const void*, std::size_t>;
  // Asks the backend to bring the pages covering `ranges` into memory ahead of their use and
  // returns at once: nothing waits for a read. uffd: pager::prefetch — the pager's fault
  // workers fill the pages from the store in the background (stats().pager.prefetched_pages
  // counts them); mmap: madvise(MADV_WILLNEED), the kernel's read-ahead of the files.
  // Caveats: a hint, not a pin — the uffd pager fills only while the buffer is below its high
  // watermark and drops the rest of the request there (it never evicts to make room), and a
  // prefetched page may be evicted again before it is used; pages that are resident already
  // cost a look-up each; a page the application then only writes whole was read for nothing.
  // Parts of a range outside the heap are ignored. Safe to call from any thread, also while
  // others allocate, write or flush.
  void prefetch(std::span<const memory_range> ranges) const;
  // Ahead of a walk over the whole heap (a scan, an export, a check, a traversal of every
  // object): reads every page of the heap that holds data, in address order, in large
  // requests (runs of pages consecutive on disk are one read each, several in flight), and
  // returns at once. uffd: as far as the buffer has room below its low watermark — the rest
  // is not read ahead and no resident page is evicted for it (stats().pager.prefetch_dropped
  // counts it), so on a heap larger than the buffer it reads the start of the heap and the
  // walk faults for the rest (fault read-ahead then follows runs of faults); never-written
  // pages are not touched. mmap: MADV_WILLNEED on the heap's used part (the kernel reads the
  // files ahead into its page cache). A hint, as prefetch(): faults never wait for it, and a
  // page the walk reaches before it is read is read by its fault.
  void prefetch_all() const;
  // Allocator and directory invariants; empty when sound. Stops the world while it runs.
  std::vector<std::string> check() const;

 private:
  friend class object_iterator;
  friend class two_phase;
  explicit manager(std::unique_ptr<detail::manager_core> core);

  template <class T>
  static void destroy_n(void* storage, std::size_t n) {
    T* p = static_cast<T*>(storage);
    for (std::size_t i = n; i-- > 0;) p[i].~T();
  }

  detail::construct_result priv_construct(instance_kind kind, std::string_view name,
                                          const type_identity& type, std::size_t n, bool find_existing,
                                          detail::init_fn init, void* ctx);
  std::pair<void*, std::size_t> priv_find(instance_kind kind, std::string_view name,
                                          const type_identity& type) const;
  bool priv_destroy(instance_kind kind, std::string_view name, const type_identity& type,
                    detail::destroy_fn dtor);
  void priv_destroy_ptr(const void* p, const type_identity& type, detail::destroy_fn dtor);
  object_info priv_info(const void* p) const;
  void priv_set_description(const void* p, std::string_view text);
  const void* priv_anchor() const;
  std::uint64_t priv_next(instance_kind kind, std::uint64_t slot) const;
  object_info priv_entry(std::uint64_t slot) const;
  detail::manager_core& core() const;

  std::unique_ptr<detail::manager_core> core_;

 public:
  // construct<T>(name)(args...) builds one T from args; [n](args...) builds n Ts, each from
  // the same args. Returns nullptr if the name exists (construct) or the existing object
  // (find_or_construct). If a constructor throws, already-built elements are destroyed and
  // the memory and name released before the exception propagates.
  template <class T, bool FindExisting>
  class construct_proxy {
    static_assert(persistable_v<T>, PHEAP_PERSISTABLE_MESSAGE);

   public:
    construct_proxy(manager* m, instance_kind k, std::string_view name) : m_(m), kind_(k), name_(name) {}

    template <class... Args>
    T* operator()(Args&&... args) const {
      auto tup = std::forward_as_tuple(std::forward<Args>(args)...);
      using tuple_t = decltype(tup);
      auto init = [](void* ctx, void* storage, std::size_t) {
        std::apply([storage](auto&&... a) { ::new (storage) T(std::forward<decltype(a)>(a)...); },
                   std::move(*static_cast<tuple_t*>(ctx)));
      };
      return static_cast<T*>(
          m_->priv_construct(kind_, name_, type_identity::of<T>(), 1, FindExisting, init, &tup).ptr);
    }

    class array_proxy {
     public:
      array_proxy(const construct_proxy& p, std::size_t n) : p_(p), n_(n) {}
      template <class... Args>
      T* operator()(const Args&... args) const {
        auto tup = std::tie(args...);
        using tuple_t = decltype(tup);
        auto init = [](void* ctx, void* storage, std::size_t n) {
          T* out = static_cast<T*>(storage);
          std::size_t i = 0;
          try {
            for (; i < n; ++i) {
              std::apply([out, i](const auto&... a) { ::new (static_cast<void*>(out + i)) T(a...); },
                         *static_cast<tuple_t*>(ctx));
            }
          } catch (...) {
            while (i-- > 0) out[i].~T();
            throw;
          }
        };
        return static_cast<T*>(p_.m_->priv_construct(p_.kind_, p_.name_, type_identity::of<T>(), n_,
                                                     FindExisting, init, &tup).ptr);
      }

     private:
      construct_proxy p_;
      std::size_t n_;
    };
    array_proxy operator[](std::size_t n) const { return array_proxy(*this, n); }

   private:
    manager* m_;
    instance_kind kind_;
    std::string_view name_;
  };

  // construct_it<T>(name)[n](it1, it2, ...) builds element i from (*it1, *it2, ...) after
  // advancing each iterator i times.
  template <class T, bool FindExisting>
  class construct_iter_proxy {
    static_assert(persistable_v<T>, PHEAP_PERSISTABLE_MESSAGE);

   public:
    construct_iter_proxy(manager* m, instance_kind k, std::string_view name) : m_(m), kind_(k), name_(name) {}

    class array_proxy {
     public:
      array_proxy(const construct_iter_proxy& p, std::size_t n) : p_(p), n_(n) {}
      template <class... Its>
      T* operator()(Its... its) const {
        auto tup = std::make_tuple(its...);
        using tuple_t = decltype(tup);
        auto init = [](void* ctx, void* storage, std::size_t n) {
          T* out = static_cast<T*>(storage);
          auto& it = *static_cast<tuple_t*>(ctx);
          std::size_t i = 0;
          try {
            for (; i < n; ++i) {
              std::apply([out, i](auto&... x) { ::new (static_cast<void*>(out + i)) T(*x...); ((void)++x, ...); }, it);
            }
          } catch (...) {
            while (i-- > 0) out[i].~T();
            throw;
          }
        };
        return static_cast<T*>(p_.m_->priv_construct(p_.kind_, p_.name_, type_identity::of<T>(), n_,
                                                     FindExisting, init, &tup).ptr);
      }

     private:
      construct_iter_proxy p_;
      std::size_t n_;
    };
    array_proxy operator[](std::size_t n) const { return array_proxy(*this, n); }

   private:
    manager* m_;
    instance_kind kind_;
    std::string_view name_;
  };
};

}  // namespace pheap
