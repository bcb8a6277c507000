// metall/container/string.hpp (pheap's Metall compatibility layer) — metall::container::basic_string, string and wstring (Boost.Container).
//
// As Metall's alias, with one difference: the default allocator is
// pheap::container::default_allocator, the heap's allocator that nests (a scoped adaptor when
// the elements take an allocator themselves, pheap/container.hpp); an allocator given
// explicitly is used as it is.
#pragma once

#include <string>

#include <boost/container/string.hpp>
#include <pheap/container.hpp>

#include <metall/metall.hpp>

namespace metall::container {

template <class CharT, class Traits = std::char_traits<CharT>,
          class Allocator = pheap::container::default_allocator<CharT>>
using basic_string = boost::container::basic_string<CharT, Traits, Allocator>;
using string = basic_string<char>;
using wstring = basic_string<wchar_t>;

}  // namespace metall::container
