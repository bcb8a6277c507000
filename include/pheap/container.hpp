// pheap/container.hpp — container aliases whose default allocator is pheap::allocator.
//
//   pheap::container::vector<T>                  boost::container::vector
//   deque, list, map, multimap, set, multiset, flat_map, flat_set, basic_string, string
//   unordered_map, unordered_set, unordered_multimap, unordered_multiset   (Boost.Unordered)
//   scoped_allocator<T>                          scoped_allocator_adaptor<allocator<T>>
//
// Each is constructed with an allocator from manager::get_allocator<...>(). Containers of
// containers: give the outer container a scoped_allocator so inner elements are built with the
// same heap, e.g.
//   using inner = pheap::container::vector<std::uint64_t>;
//   using outer = pheap::container::unordered_map<std::uint64_t, inner, boost::hash<std::uint64_t>,
//       std::equal_to<>, pheap::container::scoped_allocator<std::pair<const std::uint64_t, inner>>>;
//   auto* m = mgr.construct<outer>("adj")(mgr.get_allocator<>());
// Pointers inside are offset_ptr: the heap may be reopened at any address.
#pragma once

#include <functional>
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

namespace pheap::container {

template <class T>
using scoped_allocator = boost::container::scoped_allocator_adaptor<pheap::allocator<T>>;

template <class T, class A = pheap::allocator<T>>
using vector = boost::container::vector<T, A>;
template <class T, class A = pheap::allocator<T>>
using deque = boost::container::deque<T, A>;
template <class T, class A = pheap::allocator<T>>
using list = boost::container::list<T, A>;

template <class K, class V, class C = std::less<K>, class A = pheap::allocator<std::pair<const K, V>>>
using map = boost::container::map<K, V, C, A>;
template <class K, class V, class C = std::less<K>, class A = pheap::allocator<std::pair<const K, V>>>
using multimap = boost::container::multimap<K, V, C, A>;
template <class K, class C = std::less<K>, class A = pheap::allocator<K>>
using set = boost::container::set<K, C, A>;
template <class K, class C = std::less<K>, class A = pheap::allocator<K>>
using multiset = boost::container::multiset<K, C, A>;
template <class K, class V, class C = std::less<K>, class A = pheap::allocator<std::pair<K, V>>>
using flat_map = boost::container::flat_map<K, V, C, A>;
template <class K, class C = std::less<K>, class A = pheap::allocator<K>>
using flat_set = boost::container::flat_set<K, C, A>;

template <class Ch, class Tr = std::char_traits<Ch>, class A = pheap::allocator<Ch>>
using basic_string = boost::container::basic_string<Ch, Tr, A>;
using string = basic_string<char>;
using wstring = basic_string<wchar_t>;

template <class K, class V, class H = boost::hash<K>, class E = std::equal_to<K>,
          class A = pheap::allocator<std::pair<const K, V>>>
using unordered_map = boost::unordered_map<K, V, H, E, A>;
template <class K, class V, class H = boost::hash<K>, class E = std::equal_to<K>,
          class A = pheap::allocator<std::pair<const K, V>>>
using unordered_multimap = boost::unordered_multimap<K, V, H, E, A>;
template <class K, class H = boost::hash<K>, class E = std::equal_to<K>, class A = pheap::allocator<K>>
using unordered_set = boost::unordered_set<K, H, E, A>;
template <class K, class H = boost::hash<K>, class E = std::equal_to<K>, class A = pheap::allocator<K>>
using unordered_multiset = boost::unordered_multiset<K, H, E, A>;

}  // namespace pheap::container
