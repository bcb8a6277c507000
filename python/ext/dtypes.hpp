// python/ext/dtypes.hpp — the C++ element types a NumPy view can have, and what pheap records
// for them.
//
// An object is a NumPy array when its recorded type (pheap::type_name, the spelling of the
// compiler that constructed it) is one of these element types — an array T[n], made by
// Datastore.create_array, pheap_named_malloc (unsigned char) or m.construct<T>(name)[n] — or a
// pheap::container::vector<T> of one (a growable vector). Spellings: this compiler's (gcc and
// clang agree on "double", "int", ...; gcc writes "long int" where clang writes "long": both
// are accepted for elements; a vector's spelling must be this compiler's). Caveat: `char` is
// read as int8 (signed on x86-64), `bool` as NumPy's bool (one byte, 0 or 1 — other bytes are
// undefined in both languages).
#pragma once

#include <nanobind/ndarray.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace pheap {
class manager;
}

namespace pyheap {

struct numeric {
  const char* numpy;                  // NumPy's name: "float64", "uint8", ...
  nanobind::dlpack::dtype dt;
  std::size_t size;                   // sizeof(T)
  std::string_view element;           // pheap::type_name<T>()
  std::string_view vector;            // pheap::type_name<pheap::container::vector<T>>()

  // On a pheap::container::vector<T> at v:
  void* (*data)(void* v);
  std::size_t (*length)(const void* v);
  std::size_t (*capacity)(const void* v);
  void (*append)(void* v, const void* src, std::size_t n);  // at the end, n elements
  void (*reserve)(void* v, std::size_t n);
  // Constructs in m: an array of n zero elements / an empty vector; nullptr if the name is taken.
  void* (*make_array)(pheap::manager& m, const std::string& name, std::size_t n);
  void* (*make_vector)(pheap::manager& m, const std::string& name);
  // The vector named `name` (nullptr if none; pheap.TypeMismatchError if another type).
  void* (*find_vector)(pheap::manager& m, const std::string& name);
  bool (*destroy_array)(pheap::manager& m, const std::string& name);
  bool (*destroy_vector)(pheap::manager& m, const std::string& name);
};

// The entry whose element or vector spelling (with the element's size) is `type_name`, or
// nullptr; *is_vector tells which matched.
const numeric* numeric_of_type(std::string_view type_name, std::size_t type_size, bool* is_vector);
// The entry of a NumPy dtype name (numpy.dtype(x).name), or nullptr.
const numeric* numeric_of_numpy(std::string_view name);
// "bool, int8, ..., float64": what create_array accepts.
std::string numpy_names();

}  // namespace pyheap
