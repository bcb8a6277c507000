// metall/container/fallback_allocator.hpp (pheap's Metall compatibility layer) — an allocator
// that uses the heap when it was given a manager's allocator, and the ordinary process heap
// (malloc) when it was default-constructed.
//
// Lets one container type serve both as a persistent object and as a temporary in DRAM:
//   using vec = metall::container::vector<int, metall::manager::fallback_allocator<int>>;
//   vec* p = mgr.construct<vec>("v")(mgr.get_allocator());   // in the heap
//   vec tmp;                                                  // in DRAM (malloc)
// The pointer type is the stateful allocator's (offset_ptr): it points into DRAM just as well.
//
// Caveats:
//   * StatefulAllocator must be constructible from nullptr meaning "no heap" and report it by
//     anchor() == nullptr (pheap::allocator does: metall::manager::allocator_type<T>).
//   * A default-constructed (DRAM) container constructed INSIDE the heap is the mistake the
//     type allows: its memory is gone at exit. Nothing can detect it at compile time.
//   * Two adaptors compare equal iff both use malloc or both use the same heap; like
//     pheap::allocator, nothing propagates on container copy/move/swap.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>

namespace metall::container {

template <class StatefulAllocator>
class fallback_allocator_adaptor {
  static_assert(!std::is_default_constructible_v<StatefulAllocator>,
                "fallback_allocator_adaptor: the stateful allocator must need an argument");

  template <class U>
  using rebound = typename std::allocator_traits<StatefulAllocator>::template rebind_alloc<U>;

 public:
  using stateful_allocator_type = std::remove_cv_t<std::remove_reference_t<StatefulAllocator>>;
  using value_type = typename stateful_allocator_type::value_type;
  using pointer = typename std::allocator_traits<stateful_allocator_type>::pointer;
  using const_pointer = typename std::allocator_traits<stateful_allocator_type>::const_pointer;
  using void_pointer = typename std::allocator_traits<stateful_allocator_type>::void_pointer;
  using const_void_pointer = typename std::allocator_traits<stateful_allocator_type>::const_void_pointer;
  using size_type = typename std::allocator_traits<stateful_allocator_type>::size_type;
  using difference_type = typename std::allocator_traits<stateful_allocator_type>::difference_type;
  using propagate_on_container_copy_assignment = std::false_type;
  using propagate_on_container_move_assignment = std::false_type;
  using propagate_on_container_swap = std::false_type;
  using is_always_equal = std::false_type;

  template <class U>
  struct rebind {
    using other = fallback_allocator_adaptor<rebound<U>>;
  };

  // malloc.
  fallback_allocator_adaptor() noexcept : heap_(nullptr) {}
  // The heap of `a` (any allocator the stateful one converts from, e.g. get_allocator<>()).
  template <class A, std::enable_if_t<std::is_constructible_v<stateful_allocator_type, const A&> &&
                                          !std::is_same_v<A, std::nullptr_t>,
                                      int> = 0>
  fallback_allocator_adaptor(const A& a) noexcept : heap_(a) {}
  template <class S, std::enable_if_t<std::is_constructible_v<stateful_allocator_type, const S&>, int> = 0>
  fallback_allocator_adaptor(const fallback_allocator_adaptor<S>& other) noexcept
      : heap_(other.stateful_allocator()) {}

  pointer allocate(size_type n) {
    if (stateful_allocator_available()) return heap_.allocate(n);
    if (n > max_size()) throw std::bad_array_new_length();
    void* p = std::malloc(n * sizeof(value_type));
    if (p == nullptr) throw std::bad_alloc();
    return pointer(static_cast<value_type*>(p));
  }
  void deallocate(pointer p, size_type n) {
    if (stateful_allocator_available()) {
      heap_.deallocate(p, n);
    } else {
      std::free(std::to_address(p));
    }
  }
  size_type max_size() const noexcept { return std::allocator_traits<stateful_allocator_type>::max_size(heap_); }
  fallback_allocator_adaptor select_on_container_copy_construction() const noexcept { return *this; }

  // True when allocations go to a heap (Metall's name; it answers "is this persistent?").
  bool stateful_allocator_available() const noexcept { return heap_.anchor() != nullptr; }
  const stateful_allocator_type& stateful_allocator() const noexcept { return heap_; }
  stateful_allocator_type& stateful_allocator() noexcept { return heap_; }

  template <class S>
  bool operator==(const fallback_allocator_adaptor<S>& o) const noexcept {
    return heap_.anchor() == o.stateful_allocator().anchor();
  }
  template <class S>
  bool operator!=(const fallback_allocator_adaptor<S>& o) const noexcept {
    return !(*this == o);
  }

 private:
  stateful_allocator_type heap_;  // anchor() == nullptr: malloc
};

}  // namespace metall::container
