// pheap/allocator.hpp — the STL-style allocator for containers living in a pheap heap.
//
// pheap::allocator<T> is stateful: its only state is a boost::interprocess::offset_ptr to the
// heap's header (region offset 0). Because offset_ptr is relative to its own address, an
// allocator stored inside the heap (in a container) stays valid when the datastore is reopened
// at another address. The live heap behind a header address is found through a small
// process-wide registry of open managers (one compare for the common single-heap case).
//
// Contracts:
//   * pointer = boost::interprocess::offset_ptr<T>. Works with Boost.Container (vector, deque,
//     list, map, set, string, flat_map...) and Boost.Unordered; for containers of containers
//     use boost::container::scoped_allocator_adaptor (pheap::container::scoped_allocator<...>)
//     so inner containers get the same heap.
//   * allocate(): std::bad_alloc when the heap is full, std::bad_array_new_length when n is
//     too large, pheap::error(read_only) on a read-only heap, pheap::error(invalid_argument)
//     when the manager that owned the heap has been closed, and std::bad_alloc for types
//     aligned to more than 4096 bytes.
//   * Two allocators are equal iff they refer to the same heap. No propagation on container
//     copy/move/swap (as Metall): moving between heaps copies, swapping across heaps is UB.
//   * Using an allocator (or a container) after its manager was closed is undefined, except
//     that allocate()/deallocate() detect it and throw.
#pragma once

#include <cstddef>
#include <limits>
#include <new>
#include <type_traits>

#include <boost/interprocess/offset_ptr.hpp>

namespace pheap {

namespace detail {
// Implemented by the heap (src/heap/registry.cpp).
void* heap_allocate(const void* anchor, std::size_t bytes, std::size_t align);
void heap_deallocate(const void* anchor, void* p);
}  // namespace detail

template <class T>
class allocator {
 public:
  using value_type = T;
  using pointer = boost::interprocess::offset_ptr<T>;
  using const_pointer = boost::interprocess::offset_ptr<const T>;
  using void_pointer = boost::interprocess::offset_ptr<void>;
  using const_void_pointer = boost::interprocess::offset_ptr<const void>;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using propagate_on_container_copy_assignment = std::false_type;
  using propagate_on_container_move_assignment = std::false_type;
  using propagate_on_container_swap = std::false_type;
  using is_always_equal = std::false_type;

  template <class U>
  struct rebind {
    using other = allocator<U>;
  };

  // `anchor` is the heap header; use manager::get_allocator<T>() instead.
  explicit allocator(const void* anchor) noexcept : anchor_(anchor) {}
  allocator(const allocator& other) noexcept : anchor_(other.anchor_.get()) {}
  template <class U>
  allocator(const allocator<U>& other) noexcept : anchor_(other.anchor()) {}
  allocator& operator=(const allocator& other) noexcept {
    anchor_ = other.anchor_.get();
    return *this;
  }

  pointer allocate(size_type n) {
    if (n > max_size()) throw std::bad_array_new_length();
    return pointer(static_cast<T*>(detail::heap_allocate(anchor_.get(), n * sizeof(T), alignof(T))));
  }
  void deallocate(pointer p, size_type) { detail::heap_deallocate(anchor_.get(), p.get()); }

  size_type max_size() const noexcept { return std::numeric_limits<size_type>::max() / sizeof(T); }
  allocator select_on_container_copy_construction() const noexcept { return *this; }

  const void* anchor() const noexcept { return anchor_.get(); }

  template <class U>
  bool operator==(const allocator<U>& o) const noexcept {
    return anchor() == o.anchor();
  }
  template <class U>
  bool operator!=(const allocator<U>& o) const noexcept {
    return anchor() != o.anchor();
  }

 private:
  boost::interprocess::offset_ptr<const void> anchor_;
};

}  // namespace pheap
