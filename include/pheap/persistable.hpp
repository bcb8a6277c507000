// pheap/persistable.hpp — which types construct<T> accepts: a compile-time guard against
// objects that compile, run, and then crash when the heap is reopened.
//
// manager::construct<T>, find_or_construct<T>, construct_it<T> and find_or_construct_it<T>
// (and metall::manager's, which forward to them) static_assert pheap::persistable_v<T>.
// A type is refused when it is, or has among its template arguments (recursively):
//   * a reference or a raw pointer (T&, T&&, T*, also as array elements), a
//     std::basic_string_view or a std::span — addresses that mean nothing after a reopen at
//     another address (store boost::interprocess::offset_ptr, or an offset, instead);
//   * std::allocator, std::pmr::polymorphic_allocator, boost::container::new_allocator or
//     boost::container::allocator — memory of the process's own heap, gone at exit. This
//     refuses std::vector, std::string, std::map, std::unordered_map, std::deque, ... with
//     their default allocator, and Boost containers without pheap::allocator. A class with a
//     member allocator_type is judged by it too (so a user's allocator-aware type declaring
//     std::allocator is refused);
//   * std::unique_ptr, std::shared_ptr, std::weak_ptr, std::function.
// Everything else is accepted: trivially copyable types, pheap::container::*, Boost.Container
// and Boost.Unordered with pheap::allocator or a scoped_allocator_adaptor of it, offset_ptr,
// and any class whose template arguments are all acceptable.
//
// What it cannot see (C++20 has no reflection): the MEMBERS of a class. A user struct with a
// std::vector member, a raw pointer member or a std::string member is accepted and will crash
// after a reopen exactly as before. Say so to the check by specialising the trait:
//
//   struct session_cache { std::vector<int> ids; };      // lives in DRAM only
//   template <> struct pheap::persistable<session_cache> : std::false_type {};   // refuse
//
// The same specialisation with std::true_type accepts a type the check refuses (e.g. a struct
// template whose std::allocator argument is only used for temporaries, or a raw pointer you
// know to be an in-heap address you re-derive after every open). The verdict of a
// specialisation is also used when the type appears as a template argument, so
// pheap::container::vector<session_cache> is refused too.
// Also beyond it: non-type template parameters stop the walk (a template with a value
// parameter, e.g. boost::container::small_vector<T, N, A>, is accepted without looking at T
// or A, except for the std::array, std::span and boost::container::allocator cases named above).
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <memory_resource>
#include <span>
#include <string_view>
#include <type_traits>

#include <boost/container/container_fwd.hpp>

namespace pheap {

// The verdict for T: specialise it (std::true_type / std::false_type) to override the default
// described above. Use persistable_v<T> to ask.
template <class T>
struct persistable;

namespace detail {

// An allocator-aware class (one with a member allocator_type) is judged by its allocator:
// this sees std::allocator in containers whose allocator is not a template argument (Boost
// containers default it to void) and in user classes that declare one.
template <class T, class = void>
struct allocator_verdict : std::true_type {};
template <class T>
struct allocator_verdict<T, std::void_t<typename T::allocator_type>>
    : std::disjunction<std::is_same<typename T::allocator_type, T>, persistable<typename T::allocator_type>> {};

// Default verdicts. Unrecognised types are accepted unless their allocator_type is refused;
// class templates are judged by their template arguments too.
template <class T>
struct persistable_default : allocator_verdict<T> {};

template <template <class...> class C, class... Args>
struct persistable_default<C<Args...>> : std::conjunction<persistable<Args>..., allocator_verdict<C<Args...>>> {};

template <class T>
struct persistable_default<const T> : persistable<T> {};
template <class T>
struct persistable_default<volatile T> : persistable<T> {};
template <class T>
struct persistable_default<const volatile T> : persistable<T> {};
template <class T>
struct persistable_default<T[]> : persistable<T> {};
template <class T, std::size_t N>
struct persistable_default<T[N]> : persistable<T> {};
template <class T, std::size_t N>
struct persistable_default<std::array<T, N>> : persistable<T> {};

// Addresses.
template <class T>
struct persistable_default<T&> : std::false_type {};
template <class T>
struct persistable_default<T&&> : std::false_type {};
template <class T>
struct persistable_default<T*> : std::false_type {};
template <class C, class Tr>
struct persistable_default<std::basic_string_view<C, Tr>> : std::false_type {};
template <class T, std::size_t E>
struct persistable_default<std::span<T, E>> : std::false_type {};

// Memory of the process heap.
template <class T>
struct persistable_default<std::allocator<T>> : std::false_type {};
template <class T>
struct persistable_default<std::pmr::polymorphic_allocator<T>> : std::false_type {};
template <class T>
struct persistable_default<boost::container::new_allocator<T>> : std::false_type {};
template <class T, unsigned V, unsigned M>
struct persistable_default<boost::container::allocator<T, V, M>> : std::false_type {};

// Owners of process-heap objects.
template <class T, class D>
struct persistable_default<std::unique_ptr<T, D>> : std::false_type {};
template <class T>
struct persistable_default<std::shared_ptr<T>> : std::false_type {};
template <class T>
struct persistable_default<std::weak_ptr<T>> : std::false_type {};
template <class F>
struct persistable_default<std::function<F>> : std::false_type {};

}  // namespace detail

template <class T>
struct persistable : detail::persistable_default<T> {};

template <class T>
inline constexpr bool persistable_v = persistable<T>::value;

}  // namespace pheap

// The message construct<T> fails with; tests/heap/compile_fail/ match it.
#define PHEAP_PERSISTABLE_MESSAGE                                                                   \
  "pheap: this type cannot be constructed in a persistent heap: it is or contains a reference, a " \
  "raw pointer, a string_view/span, a smart pointer, a std::function or memory of std::allocator " \
  "(std::vector, std::string, std::map, ... with their default allocator), none of which "         \
  "survives a reopen. Use pheap::container::* (or Boost containers with pheap::allocator) and "     \
  "boost::interprocess::offset_ptr; to override, specialise pheap::persistable "                   \
  "(pheap/persistable.hpp)"
