// metall/container/stack.hpp (pheap's Metall compatibility layer) — metall::container::stack (std::stack over metall::container::deque).
//
// As Metall's alias, with one difference: the default allocator is
// pheap::container::default_allocator, the heap's allocator that nests (a scoped adaptor when
// the elements take an allocator themselves, pheap/container.hpp); an allocator given
// explicitly is used as it is.
#pragma once

#include <stack>

#include <metall/container/deque.hpp>

namespace metall::container {

template <class T, class Container = deque<T>>
using stack = std::stack<T, Container>;

}  // namespace metall::container
