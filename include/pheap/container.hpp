// pheap/container.hpp — container aliases whose default allocator keeps everything in the heap.
//
//   pheap::container::vector<T>                  boost::container::vector
//   deque, list, map, multimap, set, multiset, flat_map, flat_set, basic_string, string, wstring
//   unordered_map, unordered_set, unordered_multimap, unordered_multiset   (Boost.Unordered)
//   scoped_allocator<T>                          scoped_allocator_adaptor<pheap::allocator<T>>
//   default_allocator<T>                         what the aliases use when none is given
//
// The aliases NEST: when the elements are themselves allocator-aware (inner vectors, strings,
// maps: any type with a member allocator_type, or a std::pair holding one), the default
// allocator is scoped_allocator<value_type>, so those elements are built with the outer
// container's heap, at any depth, e.g.
//   using adj = pheap::container::unordered_map<std::uint64_t, pheap::container::vector<std::uint64_t>>;
//   auto* g = mgr.construct<adj>("adj")(mgr.get_allocator<>());   // any get_allocator<U>() works
//   (*g)[1].push_back(2);                                          // the inner vector is in the heap too
// For flat containers (elements that take no allocator) the default is the plain
// pheap::allocator<T>: the scoped adaptor would add nothing there and costs time (element
// construction goes through its construct(): bench/heap/alloc_bench.cpp measures vector and
// deque push_back 4-8 % slower with it, map inserts unchanged), and flat types keep the type
// names they had in pheap 0.1.0.
// A container is constructed with an allocator from manager::get_allocator<...>() (it converts
// to either). Pointers inside are offset_ptr: the heap may be reopened at any address.
//
// Caveats:
//   * The allocator is part of the type and so of the stored type name (pheap/type_name.hpp).
//     Objects of nested aliases written by pheap 0.1.0, whose default was the plain
//     allocator, are found with that spelling (e.g. vector<vector<int>, pheap::allocator<...>>).
//   * Allocator-awareness is detected by a member allocator_type; a type made allocator-aware
//     only by specialising uses_allocator needs scoped_allocator<T> spelled out.
//   * flat_map / flat_set (Boost 1.74) do not pass their allocator to their elements, and
//     flat_map::operator[] default-constructs the mapped value: give inner values an
//     allocator yourself (fm.emplace(k, pheap::container::string("v", mgr.get_allocator<>()))).
//   * Temporaries of an inner type (pheap::container::string("x", mgr.get_allocator<>())) still
//     need an allocator: pheap::allocator has no default constructor.
#pragma once

#include <functional>
#include <type_traits>
#include <utility>

#include <boost/container/deque.hpp>
#include <boost/container/flat_map.hpp>
#include <boost/container/flat_set.hpp>
#include <boost/container/list.hpp>
#include <boost/container/map.hpp>
#include <boost/container/scoped_allocator.hpp>
#include <boost/container/set.hpp>
#include <boost/container/string.hpp>
#include <boost/container/vector.hpp>
#include <boost/functional/hash.hpp>
#include <boost/unordered_map.hpp>
#include <boost/unordered_set.hpp>

#include "pheap/allocator.hpp"

namespace pheap::detail {
// Elements a scoped allocator must reach (pheap::container::default_allocator): types with a
// member allocator_type, and pairs (the value_type of maps) holding one.
template <class T, class = void>
struct allocator_aware : std::false_type {};
template <class T>
struct allocator_aware<T, std::void_t<typename T::allocator_type>> : std::true_type {};
template <class A, class B>
struct allocator_aware<std::pair<A, B>> : std::disjunction<allocator_aware<std::remove_cv_t<A>>, allocator_aware<B>> {};
}  // namespace pheap::detail

namespace pheap::container {

template <class T>
using scoped_allocator = boost::container::scoped_allocator_adaptor<pheap::allocator<T>>;

template <class T>
using default_allocator =
    std::conditional_t<detail::allocator_aware<T>::value, scoped_allocator<T>, pheap::allocator<T>>;

template <class T, class A = default_allocator<T>>
using vector = boost::container::vector<T, A>;
template <class T, class A = default_allocator<T>>
using deque = boost::container::deque<T, A>;
template <class T, class A = default_allocator<T>>
using list = boost::container::list<T, A>;

template <class K, class V, class C = std::less<K>, class A = default_allocator<std::pair<const K, V>>>
using map = boost::container::map<K, V, C, A>;
template <class K, class V, class C = std::less<K>, class A = default_allocator<std::pair<const K, V>>>
using multimap = boost::container::multimap<K, V, C, A>;
template <class K, class C = std::less<K>, class A = default_allocator<K>>
using set = boost::container::set<K, C, A>;
template <class K, class C = std::less<K>, class A = default_allocator<K>>
using multiset = boost::container::multiset<K, C, A>;
template <class K, class V, class C = std::less<K>, class A = default_allocator<std::pair<K, V>>>
using flat_map = boost::container::flat_map<K, V, C, A>;
template <class K, class C = std::less<K>, class A = default_allocator<K>>
using flat_set = boost::container::flat_set<K, C, A>;

template <class Ch, class Tr = std::char_traits<Ch>, class A = default_allocator<Ch>>
using basic_string = boost::container::basic_string<Ch, Tr, A>;
using string = basic_string<char>;
using wstring = basic_string<wchar_t>;

template <class K, class V, class H = boost::hash<K>, class E = std::equal_to<K>,
          class A = default_allocator<std::pair<const K, V>>>
using unordered_map = boost::unordered_map<K, V, H, E, A>;
template <class K, class V, class H = boost::hash<K>, class E = std::equal_to<K>,
          class A = default_allocator<std::pair<const K, V>>>
using unordered_multimap = boost::unordered_multimap<K, V, H, E, A>;
template <class K, class H = boost::hash<K>, class E = std::equal_to<K>, class A = default_allocator<K>>
using unordered_set = boost::unordered_set<K, H, E, A>;
template <class K, class H = boost::hash<K>, class E = std::equal_to<K>, class A = default_allocator<K>>
using unordered_multiset = boost::unordered_multiset<K, H, E, A>;

}  // namespace pheap::container
