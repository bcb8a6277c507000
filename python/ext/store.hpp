// python/ext/store.hpp — one open datastore as the Python package holds it: the manager, the
// lock that orders Python threads around it, and the NumPy views that point into its heap.
//
// Lifetime. A store is owned by shared_ptr: its Datastore (or Graph) handle holds one, and so
// does every NumPy view made from it (through the view's owner capsule). close() flushes and
// marks the store closed at once (the handle then refuses every call: pheap.ClosedError);
// the manager itself — the mapping and the datastore's lock — goes then if no view is alive,
// else when the last view is deleted, so a view that outlives close() still reads (and,
// read-write, writes) valid memory. Never a dangling pointer, never a segfault; the price is
// that the datastore stays locked until its last view is gone (release_hint() says so in the
// error of a conflicting open).
//
// Threads. `mu` is a shared mutex: flush, snapshot, close, destroy and add_edges take it
// exclusively, every other call shared. The callers that release the GIL take it with the
// GIL released; the others try it first and release the GIL only to wait (exclusive holders
// never need the GIL while they hold it).
//
// Views. exports[key] counts the live views of one object (key: the object's address): an
// object cannot be destroyed, nor a vector reallocated, while a view of it lives (BufferError,
// as bytearray refuses to resize while exported) — the view would point at freed memory. For
// the same reason a read-only handle is not refreshed while any view of it lives: after the
// move to a newer watermark a view would read whatever the writer put at its address.
#pragma once

#include <pheap/pheap.hpp>

#include <nanobind/nanobind.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>

namespace pyheap {

namespace nb = nanobind;

class store {
 public:
  store(std::unique_ptr<pheap::manager> m, std::string path, pheap::huge_pages_mode huge_pages_asked);
  ~store();
  store(const store&) = delete;
  store& operator=(const store&) = delete;

  // The manager; throws pheap.ClosedError once close() was called.
  pheap::manager& manager() const;
  const std::string& path() const noexcept { return path_; }
  bool read_only() const noexcept { return read_only_; }
  bool closed() const noexcept { return closed_; }
  std::uint64_t page_size() const noexcept { return page_size_; }
  // What the open asked of huge pages (options' pager.huge_pages), for info().
  pheap::huge_pages_mode huge_pages_asked() const noexcept { return huge_pages_asked_; }
  // The read-write manager; throws pheap.ReadOnlyError naming `op` on a read-only one.
  pheap::manager& writable(const std::string& op) const;

  std::shared_mutex& mu() noexcept { return mu_; }
  // Flushes (read-write) and marks the store closed; the caller holds mu exclusively.
  void close();
  // Marks the store closed WITHOUT a flush, and never flushes it again: the heap holds a
  // half-done mutation (add_edges failed inside a batch) that no watermark may take. The
  // manager is leaked on purpose (its destructor would flush): its mapping stays, and so does
  // the datastore's lock, until the process exits. The caller holds mu exclusively.
  void abandon() noexcept;
  // Moves a read-only handle to the datastore's newest watermark (pheap::manager::refresh) and
  // returns its epoch. Refused while a view lives (BufferError, naming how many): a view's
  // address would read the new watermark's bytes, whatever object is there now. A read-write
  // handle is pheap.InvalidArgumentError (it is always at its newest watermark). The caller
  // holds mu exclusively, without the GIL.
  std::uint64_t refresh();
  // Live views of the object at `key`, and of every object.
  long exports(const void* key) const;
  long exports() const;
  void add_export(const void* key);
  void drop_export(const void* key) noexcept;

  // Reads one byte of every page of [p, p + bytes) under pheap::guard_faults, after asking the
  // backend to prefetch the range: a damaged page is the store's pheap::error (CorruptError)
  // here, not SIGBUS in NumPy later. Call without the GIL.
  void touch(const void* p, std::size_t bytes) const;

 private:
  std::unique_ptr<pheap::manager> m_;
  std::string path_;
  bool read_only_;
  std::atomic<bool> closed_{false};  // set under exports_mu_; read anywhere
  bool abandoned_ = false;           // under exports_mu_
  std::uint64_t page_size_;
  pheap::huge_pages_mode huge_pages_asked_;
  std::shared_mutex mu_;
  mutable std::mutex exports_mu_;
  std::unordered_map<const void*, long> exports_;
};

using store_ptr = std::shared_ptr<store>;

// Opens (or creates) a datastore; registers it so that a conflicting open in this process
// can name the views that keep an earlier handle alive. Call without the GIL.
store_ptr open_store(const std::string& path, bool create, bool read_only, const pheap::options& o);

// "; N NumPy view(s) of an earlier handle of PATH in this process keep it open until they
// are deleted" when that is so, else "".
std::string release_hint(const std::string& path);

// Flushes every read-write store still open (atexit): the last writes are durable even when
// the interpreter exits with handles or views alive. Never throws.
void flush_all_at_exit() noexcept;

// Shared lock of the store, taken without holding the GIL while waiting.
class shared_guard {
 public:
  explicit shared_guard(store& s);
  ~shared_guard() { s_.mu().unlock_shared(); }
  shared_guard(const shared_guard&) = delete;
  shared_guard& operator=(const shared_guard&) = delete;

 private:
  store& s_;
};

// The owner of a NumPy view: keeps the store alive and counts the export.
nb::capsule view_owner(const store_ptr& s, const void* key);

// Throws pheap.ClosedError / the other pheap exceptions (errors.cpp).
[[noreturn]] void raise_closed(const std::string& path, const std::string& what);

}  // namespace pyheap
