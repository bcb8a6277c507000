// metall/basic_manager.hpp (pheap's Metall compatibility layer) — metall::manager over a pheap
// datastore, with Metall's spelling and Metall's run-time behaviour.
//
// Every member is noexcept and reports failure by its result: false, nullptr, 0, an empty
// string, or a manager whose check_sanity() is false (failed constructor). The pheap::error
// behind a failure is logged at level error (metall/logger.hpp), naming the datastore and the
// cause. pheap::manager, the native API, keeps its exceptions.
//
// Metall behaviour reproduced where pheap's native API differs:
//   * create_only over an existing datastore replaces it (pheap refuses: already_exists). An
//     existing empty directory is used; a non-empty directory that is not a pheap datastore is
//     refused (Metall would create "<path>/mds" inside it; pheap's datastore IS the
//     directory, and the layer does not delete files it does not own).
//   * remove() of a missing path returns false (pheap: error not_found), silently.
//   * snapshot(dst) over an existing datastore (or empty directory) replaces it.
//   * construct<T> returns nullptr, logged, when the heap is full or the manager is
//     read-only; exceptions of T's constructor propagate (a std::bad_alloc from T's
//     constructor also becomes nullptr: pheap has already undone the construction).
//   * A failed flush() or snapshot() ends the manager (check_sanity() false), as in Metall;
//     usage errors (read-only, type mismatch, full heap) do not.
//   * get_description(std::string*) is false when the datastore has no description.
// And where pheap is simply stronger, the stronger behaviour is kept (documented in
// pheap/manager.hpp): flush(synchronous) is always a durable, atomic, crash-safe watermark
// (Metall's is an msync and the datastore stays inconsistent until close); a datastore that
// was not closed (crash, kill -9) is still consistent(): it opens at its last flush; a
// read-write open excludes other openers (flock, as Metall 0.32).
// Also different: the default capacity is pheap's (pheap::options::capacity, 64 GiB of
// address space), not Metall's 8 TiB; get_instance_name() of a unique object is
// pheap::type_name<T>(), not typeid(T).name(); get_version() is the pheap version of the last
// writer (pheap::library_version); copy(src, dst, clone, threads) ignores clone and threads
// (pheap copies sparse segment files itself) and, like a snapshot, gives the copy a new UUID
// (Metall's copy keeps it).
#pragma once

#include <pheap/pheap.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <boost/container/scoped_allocator.hpp>

#include <metall/container/fallback_allocator.hpp>
#include <metall/logger.hpp>
#include <metall/object_attribute.hpp>
#include <metall/offset_ptr.hpp>
#include <metall/tags.hpp>
#include <metall/version.hpp>

namespace metall {

namespace detail {

// Logs the exception being handled (call inside a catch block).
inline void log_current(const char* file, int line) noexcept {
  try {
    throw;
  } catch (const std::exception& e) {
    logger::out(logger::level::error, file, line, e.what());
  } catch (...) {
    logger::out(logger::level::error, file, line, "an exception of unknown type has been thrown");
  }
}
#define METALL_PHEAP_LOG_CURRENT() ::metall::detail::log_current(__FILE__, __LINE__)

// Errors after which a pheap handle cannot be trusted to go on (Metall then drops its kernel).
inline bool ends_the_manager(const pheap::error& e) noexcept {
  switch (e.code()) {
    case pheap::errc::io:
    case pheap::errc::no_space:
    case pheap::errc::corrupt:
    case pheap::errc::poisoned: return true;
    default: return false;
  }
}

// Makes room for a datastore at `path` the way Metall's create/snapshot do: an existing
// pheap datastore is removed, an empty directory is removed (pheap creates it), anything else
// is refused with error(already_exists).
inline void clear_destination(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) return;
  if (fs::is_directory(path, ec) && fs::is_empty(path, ec)) {
    fs::remove(path);
    return;
  }
  if (!fs::exists(fs::path(path) / "pheap.super", ec)) {
    throw pheap::error(pheap::errc::already_exists, path, "create",
                       "exists and is not a pheap datastore: refusing to replace it");
  }
  pheap::manager::remove(path);
}

// What construct<T>(x) keys an object by: the tag for unique and anonymous objects, else the
// name as a string_view (the proxy keeps the view: call it in the same expression).
template <class Name>
using key_of = std::conditional_t<std::is_same_v<Name, unique_instance_t> || std::is_same_v<Name, anonymous_instance_t>,
                                  Name, std::string_view>;

// construct<T>(name / unique / anonymous) and find_or_construct<T>(...), Metall style: nullptr
// (logged) when pheap refuses or the heap is full; T's own exceptions propagate.
template <class T, bool FindExisting, class Name>
class construct_proxy {
  static_assert(pheap::persistable_v<T>, PHEAP_PERSISTABLE_MESSAGE);

 public:
  construct_proxy(pheap::manager* m, Name name) noexcept : m_(m), name_(name) {}

  template <class... Args>
  T* operator()(Args&&... args) const {
    return guarded([&] { return native()(std::forward<Args>(args)...); });
  }

  class array_proxy {
   public:
    array_proxy(const construct_proxy& p, std::size_t n) noexcept : p_(p), n_(n) {}
    template <class... Args>
    T* operator()(const Args&... args) const {
      return p_.guarded([&] { return p_.native()[n_](args...); });
    }

   private:
    construct_proxy p_;
    std::size_t n_;
  };
  array_proxy operator[](std::size_t n) const noexcept { return {*this, n}; }

 private:
  auto native() const {
    if constexpr (FindExisting) {
      return m_->template find_or_construct<T>(name_);
    } else {
      return m_->template construct<T>(name_);
    }
  }
  template <class F>
  T* guarded(F&& f) const {
    if (m_ == nullptr) return nullptr;
    try {
      return f();
    } catch (const pheap::error&) {
      METALL_PHEAP_LOG_CURRENT();
    } catch (const std::bad_alloc&) {
      METALL_PHEAP_LOG_CURRENT();
    }
    return nullptr;
  }

  pheap::manager* m_;
  Name name_;
};

// construct_it<T>(...)[n](iterators...) and find_or_construct_it<T>(...).
template <class T, bool FindExisting, class Name>
class construct_iter_proxy {
  static_assert(pheap::persistable_v<T>, PHEAP_PERSISTABLE_MESSAGE);

 public:
  construct_iter_proxy(pheap::manager* m, Name name) noexcept : m_(m), name_(name) {}

  class array_proxy {
   public:
    array_proxy(const construct_iter_proxy& p, std::size_t n) noexcept : p_(p), n_(n) {}
    template <class... Its>
    T* operator()(Its... its) const {
      if (p_.m_ == nullptr) return nullptr;
      try {
        if constexpr (FindExisting) {
          return p_.m_->template find_or_construct_it<T>(p_.name_)[n_](its...);
        } else {
          return p_.m_->template construct_it<T>(p_.name_)[n_](its...);
        }
      } catch (const pheap::error&) {
        METALL_PHEAP_LOG_CURRENT();
      } catch (const std::bad_alloc&) {
        METALL_PHEAP_LOG_CURRENT();
      }
      return nullptr;
    }

   private:
    construct_iter_proxy p_;
    std::size_t n_;
  };
  array_proxy operator[](std::size_t n) const noexcept { return {*this, n}; }

 private:
  pheap::manager* m_;
  Name name_;
};

}  // namespace detail

template <class ChunkNumber = std::uint32_t, std::size_t ChunkSize = (std::size_t{1} << 21)>
class basic_manager {
 public:
  // ---- types --------------------------------------------------------------------------------
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using char_type = char;
  using void_pointer = offset_ptr<void>;
  using path_type = std::filesystem::path;
  using chunk_number_type = ChunkNumber;
  using instance_kind = pheap::instance_kind;
  template <class T>
  using allocator_type = pheap::allocator<T>;
  template <class Outer, class... Inner>
  using scoped_allocator_type =
      boost::container::scoped_allocator_adaptor<allocator_type<Outer>, allocator_type<Inner>...>;
  template <class T>
  using fallback_allocator = container::fallback_allocator_adaptor<allocator_type<T>>;
  template <class Outer, class... Inner>
  using scoped_fallback_allocator_type =
      boost::container::scoped_allocator_adaptor<fallback_allocator<Outer>, fallback_allocator<Inner>...>;
  template <class T>
  using construct_proxy = detail::construct_proxy<T, false, std::string_view>;
  template <class T>
  using construct_iter_proxy = detail::construct_iter_proxy<T, false, std::string_view>;
  using const_named_iterator = object_attribute_iterator;
  using const_unique_iterator = object_attribute_iterator;
  using const_anonymous_iterator = object_attribute_iterator;
  using named_object_attribute_accessor_type = object_attribute_accessor;
  using unique_object_attribute_accessor_type = object_attribute_accessor;
  using anonymous_object_attribute_accessor_type = object_attribute_accessor;

  // ---- open / create ------------------------------------------------------------------------
  basic_manager(open_only_t, const path_type& path) noexcept {
    open([&] { return std::make_unique<pheap::manager>(pheap::open_only, path.string()); });
  }
  basic_manager(open_read_only_t, const path_type& path) noexcept {
    open([&] { return std::make_unique<pheap::manager>(pheap::open_read_only, path.string()); });
  }
  // Replaces a datastore at `path` (see the file comment).
  basic_manager(create_only_t, const path_type& path) noexcept : basic_manager(create_only, path, 0) {}
  // `capacity`: maximum total allocation size in bytes (0: pheap's default).
  basic_manager(create_only_t, const path_type& path, size_type capacity) noexcept {
    open([&] {
      const std::string p = path.string();
      detail::clear_destination(p);
      pheap::options o = pheap::options::from_env();  // what the other constructors use
      if (capacity != 0) o.capacity = capacity;
      return std::make_unique<pheap::manager>(pheap::create_only, p, o);
    });
  }
  basic_manager() = delete;
  ~basic_manager() noexcept = default;  // pheap::manager's destructor flushes and never throws
  basic_manager(const basic_manager&) = delete;
  basic_manager& operator=(const basic_manager&) = delete;
  basic_manager(basic_manager&& o) noexcept : m_(std::move(o.m_)) {
    std::lock_guard g(o.names_mutex_);
    names_ = std::move(o.names_);
  }
  basic_manager& operator=(basic_manager&& o) noexcept {
    if (this != &o) {
      m_ = std::move(o.m_);
      std::scoped_lock g(names_mutex_, o.names_mutex_);
      names_ = std::move(o.names_);
    }
    return *this;
  }

  // ---- objects ------------------------------------------------------------------------------
  // `name`: a string (named object), metall::unique_instance or metall::anonymous_instance
  // (find_or_construct*: no anonymous objects, as in Metall).
  template <class T, class Name>
  auto construct(const Name& name) noexcept {
    return detail::construct_proxy<T, false, detail::key_of<Name>>(m_.get(), name);
  }
  template <class T, class Name>
  auto find_or_construct(const Name& name) noexcept {
    return detail::construct_proxy<T, true, detail::key_of<Name>>(m_.get(), name);
  }
  template <class T, class Name>
  auto construct_it(const Name& name) noexcept {
    return detail::construct_iter_proxy<T, false, detail::key_of<Name>>(m_.get(), name);
  }
  template <class T, class Name>
  auto find_or_construct_it(const Name& name) noexcept {
    return detail::construct_iter_proxy<T, true, detail::key_of<Name>>(m_.get(), name);
  }

  template <class T>
  std::pair<T*, size_type> find(std::string_view name) const noexcept {
    return guard(std::pair<T*, size_type>(nullptr, 0), [&] { return m_->template find<T>(name); });
  }
  template <class T>
  std::pair<T*, size_type> find(unique_instance_t) const noexcept {
    return guard(std::pair<T*, size_type>(nullptr, 0), [&] { return m_->template find<T>(pheap::unique_instance); });
  }
  template <class T>
  bool destroy(std::string_view name) noexcept {
    return guard(false, [&] { return destroy_found(m_->template find<T>(name).first); });
  }
  template <class T>
  bool destroy(unique_instance_t) noexcept {
    return guard(false, [&] { return destroy_found(m_->template find<T>(pheap::unique_instance).first); });
  }
  template <class T>
  bool destroy_ptr(const T* p) noexcept {
    return guard(false, [&] { return destroy_found(p); });
  }

  // ---- instance attributes ------------------------------------------------------------------
  // The name as a C string, valid until the object is destroyed or the manager closes; nullptr
  // for anonymous objects and foreign pointers.
  template <class T>
  const char_type* get_instance_name(const T* p) const noexcept {
    return guard(static_cast<const char_type*>(nullptr), [&]() -> const char_type* {
      const pheap::object_info i = m_->get_instance_info(p);
      if (i.kind == instance_kind::anonymous_kind) return nullptr;
      std::lock_guard g(names_mutex_);
      std::string& name = names_[i.value];
      if (name != i.name) name.assign(i.name);  // a new object at a freed address
      return name.c_str();
    });
  }
  template <class T>
  instance_kind get_instance_kind(const T* p) const noexcept {
    return guard(instance_kind{}, [&] { return m_->get_instance_kind(p); });
  }
  template <class T>
  size_type get_instance_length(const T* p) const noexcept {
    return guard(size_type{0}, [&] { return m_->get_instance_length(p); });
  }
  template <class T>
  bool is_instance_type(const void* p) const noexcept {
    return guard(false, [&] { return m_->template is_instance_type<T>(p); });
  }
  template <class T>
  bool get_instance_description(const T* p, std::string* description) const noexcept {
    return guard(false, [&] {
      m_->get_instance_description(p, description);
      return true;
    });
  }
  template <class T>
  bool set_instance_description(const T* p, const std::string& description) noexcept {
    return guard(false, [&] {
      m_->set_instance_description(p, description);
      return true;
    });
  }

  // ---- directories --------------------------------------------------------------------------
  size_type get_num_named_objects() const noexcept {
    return guard(size_type{0}, [&] { return m_->get_num_named_objects(); });
  }
  size_type get_num_unique_objects() const noexcept {
    return guard(size_type{0}, [&] { return m_->get_num_unique_objects(); });
  }
  size_type get_num_anonymous_objects() const noexcept {
    return guard(size_type{0}, [&] { return m_->get_num_anonymous_objects(); });
  }
  const_named_iterator named_begin() const noexcept { return begin_of(instance_kind::named_kind); }
  const_named_iterator named_end() const noexcept { return {}; }
  const_unique_iterator unique_begin() const noexcept { return begin_of(instance_kind::unique_kind); }
  const_unique_iterator unique_end() const noexcept { return {}; }
  const_anonymous_iterator anonymous_begin() const noexcept { return begin_of(instance_kind::anonymous_kind); }
  const_anonymous_iterator anonymous_end() const noexcept { return {}; }

  static named_object_attribute_accessor_type access_named_object_attribute(const path_type& path) noexcept {
    return {instance_kind::named_kind, path.string()};
  }
  static unique_object_attribute_accessor_type access_unique_object_attribute(const path_type& path) noexcept {
    return {instance_kind::unique_kind, path.string()};
  }
  static anonymous_object_attribute_accessor_type access_anonymous_object_attribute(const path_type& path) noexcept {
    return {instance_kind::anonymous_kind, path.string()};
  }

  // ---- memory -------------------------------------------------------------------------------
  void* allocate(size_type nbytes) noexcept {
    return guard(static_cast<void*>(nullptr), [&] { return m_->allocate(nbytes); });
  }
  void* allocate_aligned(size_type nbytes, size_type alignment) noexcept {
    return guard(static_cast<void*>(nullptr), [&] { return m_->allocate_aligned(nbytes, alignment); });
  }
  void deallocate(void* addr) noexcept {
    guard(false, [&] {
      m_->deallocate(addr);
      return true;
    });
  }
  bool all_memory_deallocated() const noexcept {
    return guard(false, [&] { return m_->all_memory_deallocated(); });
  }
  template <class T = std::byte>
  allocator_type<T> get_allocator() const noexcept {
    return m_ ? m_->template get_allocator<T>() : allocator_type<T>(nullptr);
  }

  // ---- durability and datastores ------------------------------------------------------------
  // A durable, atomic watermark in either mode (see the file comment).
  void flush([[maybe_unused]] bool synchronous = true) noexcept {
    fatal_guard([&] {
      m_->flush();
      return true;
    });
  }
  // Flushes and writes a consistent copy with a new UUID at `destination` (replacing a
  // datastore there). `clone` and `num_max_copy_threads` are accepted and ignored: pheap
  // copies its sparse segment files (reflink where the file system has it).
  bool snapshot(const path_type& destination, [[maybe_unused]] bool clone = true,
                [[maybe_unused]] int num_max_copy_threads = 0) noexcept {
    return fatal_guard([&] {
      const std::string dst = destination.string();
      detail::clear_destination(dst);
      m_->snapshot(dst);
      return true;
    });
  }
  static bool copy(const path_type& source, const path_type& destination, [[maybe_unused]] bool clone = true,
                   [[maybe_unused]] int num_max_copy_threads = 0) noexcept {
    return static_guard([&] {
      const std::string dst = destination.string();
      detail::clear_destination(dst);
      pheap::manager::copy(source.string(), dst);
      return true;
    });
  }
  static std::future<bool> copy_async(const path_type& source, const path_type& destination, bool clone = true,
                                      int num_max_copy_threads = 0) noexcept {
    return async([=] { return copy(source, destination, clone, num_max_copy_threads); });
  }
  // False, without a log line, when nothing is at `path`.
  static bool remove(const path_type& path) noexcept {
    return static_guard([&] {
      std::error_code ec;
      if (!std::filesystem::exists(path, ec)) return false;
      pheap::manager::remove(path.string());
      return true;
    });
  }
  static std::future<bool> remove_async(const path_type& path) noexcept {
    return async([=] { return remove(path); });
  }
  // True iff `path` holds a datastore that opens (also after a crash: at its last flush).
  static bool consistent(const path_type& path) noexcept { return pheap::manager::consistent(path.string()); }

  std::string get_uuid() const noexcept {
    return guard(std::string(), [&] { return m_->get_uuid(); });
  }
  static std::string get_uuid(const path_type& path) noexcept {
    return static_guard([&] { return pheap::manager::get_uuid(path.string()); });
  }
  version_type get_version() const noexcept {
    return guard(version_type{0}, [&] { return m_->get_version(); });
  }
  static version_type get_version(const path_type& path) noexcept {
    return static_guard([&] { return pheap::manager::get_version(path.string()); });
  }

  bool set_description(const std::string& description) noexcept {
    return guard(false, [&] {
      m_->set_description(description);
      return true;
    });
  }
  static bool set_description(const path_type& path, const std::string& description) noexcept {
    return static_guard([&] {
      pheap::manager::set_description(path.string(), description);
      return true;
    });
  }
  // False when there is no description (then *description is left as it was) or on error.
  bool get_description(std::string* description) const noexcept {
    return guard(false, [&] { return copy_description(m_->get_description(), description); });
  }
  static bool get_description(const path_type& path, std::string* description) noexcept {
    return static_guard([&] { return copy_description(pheap::manager::get_description(path.string()), description); });
  }

  // ---- introspection ------------------------------------------------------------------------
  static constexpr size_type chunk_size() noexcept { return ChunkSize; }
  const void* get_address() const noexcept { return m_ ? m_->get_address() : nullptr; }
  size_type get_size() const noexcept { return m_ ? m_->get_size() : 0; }
  bool read_only() const noexcept { return m_ && m_->read_only(); }
  // False after a failed constructor, or after a failed flush/snapshot ended the manager.
  bool check_sanity() const noexcept { return m_ != nullptr; }
  // pheap's statistics and invariant check, one "key: value" per line.
  template <class OStream>
  void profile(OStream* out) const noexcept {
    guard(false, [&] {
      const pheap::manager_stats s = m_->stats();
      *out << "capacity: " << s.capacity << "\nchunk_size: " << s.chunk_size << "\nchunks_in_use: "
           << s.chunks_in_use << "\nsmall_bytes: " << s.small_bytes << "\nlarge_bytes: " << s.large_bytes
           << "\nnamed_objects: " << s.named_objects << "\nunique_objects: " << s.unique_objects
           << "\nanonymous_objects: " << s.anonymous_objects << "\ndisk_bytes: " << s.disk_bytes
           << "\nepoch: " << s.epoch << "\ninvariant_problems: " << m_->check().size() << '\n';
      return true;
    });
  }

  // The pheap manager underneath (nullptr when !check_sanity()): the native, throwing API.
  pheap::manager* native() noexcept { return m_.get(); }

 private:
  template <class Make>
  void open(Make&& make) noexcept {
    try {
      m_ = make();
    } catch (...) {
      METALL_PHEAP_LOG_CURRENT();
      m_.reset();
    }
  }
  // f() on a sane manager; `failed` (logged) when insane or f throws.
  template <class R, class F>
  R guard(R failed, F&& f) const noexcept {
    if (!m_) return failed;
    try {
      return f();
    } catch (...) {
      METALL_PHEAP_LOG_CURRENT();
    }
    return failed;
  }
  // guard() for flush/snapshot: an I/O-class failure ends the manager.
  template <class F>
  bool fatal_guard(F&& f) noexcept {
    if (!m_) return false;
    try {
      return f();
    } catch (const pheap::error& e) {
      METALL_PHEAP_LOG_CURRENT();
      if (detail::ends_the_manager(e)) m_.reset();
    } catch (...) {
      METALL_PHEAP_LOG_CURRENT();
    }
    return false;
  }
  // Destroys p (if not null) and forgets its cached C-string name.
  template <class T>
  bool destroy_found(const T* p) {
    if (p == nullptr) return false;
    m_->destroy_ptr(p);
    std::lock_guard g(names_mutex_);
    names_.erase(p);
    return true;
  }
  template <class F>
  static auto static_guard(F&& f) noexcept -> decltype(f()) {
    try {
      return f();
    } catch (...) {
      METALL_PHEAP_LOG_CURRENT();
    }
    return decltype(f()){};
  }
  template <class F>
  static std::future<bool> async(F&& f) noexcept {
    try {
      return std::async(std::launch::async, std::forward<F>(f));
    } catch (...) {
      METALL_PHEAP_LOG_CURRENT();
    }
    return {};
  }
  static bool copy_description(const std::string& text, std::string* out) {
    if (text.empty()) return false;
    if (out != nullptr) *out = text;
    return true;
  }
  const_named_iterator begin_of(instance_kind k) const noexcept {
    return guard(object_attribute_iterator{}, [&] { return object_attribute_iterator(detail::snapshot(*m_, k), 0); });
  }

  std::unique_ptr<pheap::manager> m_;  // null: construction failed or a flush/snapshot ended it
  mutable std::mutex names_mutex_;     // guards names_
  mutable std::map<const void*, std::string> names_;  // get_instance_name's C strings
};

using manager = basic_manager<>;

}  // namespace metall
