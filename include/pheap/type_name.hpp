// pheap/type_name.hpp — stable, compiler-independent-ish type identity for named objects.
//
// type_name<T>() is the type's spelling as printed by the compiler's pretty-function
// machinery (gcc/clang: "int", "std::pair<int, double>", ...), computed at compile time, NOT
// typeid(T).hash_code() (which differs across compilers, libraries and runs). pheap stores it
// with each named/unique/anonymous object, together with sizeof(T) and alignof(T), and
// find<T>() compares all three.
// Caveat: two different compilers may spell the same type differently (e.g. default template
// arguments shown or not, "unsigned int" vs "unsigned"); the stored spelling is the one of
// the compiler that constructed the object.
#pragma once

#include <cstddef>
#include <string_view>

namespace pheap {

namespace detail {
template <class T>
constexpr std::string_view raw_type_name() noexcept {
#if defined(__clang__) || defined(__GNUC__)
  return __PRETTY_FUNCTION__;
#else
#error "pheap needs gcc or clang (__PRETTY_FUNCTION__) for type names"
#endif
}

template <class T>
constexpr std::string_view extract_type_name() noexcept {
  constexpr std::string_view raw = raw_type_name<T>();
  constexpr std::string_view key = "T = ";
  constexpr std::size_t start = raw.find(key) + key.size();
  // gcc: "... [with T = int; std::string_view = ...]"; clang: "... [T = int]"
  constexpr std::size_t semi = raw.find(';', start);
  constexpr std::size_t end = semi != std::string_view::npos ? semi : raw.rfind(']');
  return raw.substr(start, end - start);
}
}  // namespace detail

// The spelling of T, e.g. type_name<int>() == "int".
template <class T>
constexpr std::string_view type_name() noexcept {
  return detail::extract_type_name<T>();
}

// What pheap records about an object's type.
struct type_identity {
  std::string_view name;
  std::size_t size;
  std::size_t align;

  template <class T>
  static constexpr type_identity of() noexcept {
    return {type_name<T>(), sizeof(T), alignof(T)};
  }
};

}  // namespace pheap
