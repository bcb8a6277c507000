#include "dtypes.hpp"

#include <pheap/container.hpp>
#include <pheap/manager.hpp>
#include <pheap/type_name.hpp>

#include <array>
#include <cstdint>

namespace pyheap {

namespace nb = nanobind;

namespace {

template <class T>
using vec = pheap::container::vector<T>;

template <class T>
numeric entry(const char* numpy_name) {
  numeric n{};
  n.numpy = numpy_name;
  n.dt = nb::dtype<T>();
  n.size = sizeof(T);
  n.element = pheap::type_name<T>();
  n.vector = pheap::type_name<vec<T>>();
  n.data = [](void* v) -> void* { return static_cast<vec<T>*>(v)->data(); };
  n.length = [](const void* v) -> std::size_t { return static_cast<const vec<T>*>(v)->size(); };
  n.capacity = [](const void* v) -> std::size_t { return static_cast<const vec<T>*>(v)->capacity(); };
  n.append = [](void* v, const void* src, std::size_t k) {
    const T* s = static_cast<const T*>(src);
    static_cast<vec<T>*>(v)->insert(static_cast<vec<T>*>(v)->end(), s, s + k);
  };
  n.reserve = [](void* v, std::size_t k) { static_cast<vec<T>*>(v)->reserve(k); };
  n.make_array = [](pheap::manager& m, const std::string& name, std::size_t k) -> void* {
    return m.construct<T>(name)[k]();
  };
  n.make_vector = [](pheap::manager& m, const std::string& name) -> void* {
    return m.construct<vec<T>>(name)(m.get_allocator<T>());
  };
  n.find_vector = [](pheap::manager& m, const std::string& name) -> void* {
    return m.find<vec<T>>(name).first;
  };
  n.destroy_array = [](pheap::manager& m, const std::string& name) { return m.destroy<T>(name); };
  n.destroy_vector = [](pheap::manager& m, const std::string& name) { return m.destroy<vec<T>>(name); };
  return n;
}

// NumPy's bool is one byte like C++'s; nanobind's dtype<bool> says so.
const std::array<numeric, 12>& table() {
  static const std::array<numeric, 12> t = {
      entry<bool>("bool"),
      entry<std::int8_t>("int8"),
      entry<std::uint8_t>("uint8"),
      entry<std::int16_t>("int16"),
      entry<std::uint16_t>("uint16"),
      entry<std::int32_t>("int32"),
      entry<std::uint32_t>("uint32"),
      entry<std::int64_t>("int64"),
      entry<std::uint64_t>("uint64"),
      entry<float>("float32"),
      entry<double>("float64"),
      entry<char>("int8"),  // read only: create_array(int8) makes signed char
  };
  return t;
}

// Other compilers' spellings of the same element types (clang: "long", "unsigned long"; the
// long long types of a program that used them): read as the entry of the same NumPy type.
struct alias {
  std::string_view spelling;
  const char* numpy;
};
constexpr std::array<alias, 10> kAliases = {{
    {"long", "int64"},
    {"unsigned long", "uint64"},
    {"long long int", "int64"},
    {"long long", "int64"},
    {"long long unsigned int", "uint64"},
    {"unsigned long long", "uint64"},
    {"short", "int16"},
    {"unsigned short", "uint16"},
    {"unsigned", "uint32"},
    {"_Bool", "bool"},
}};

}  // namespace

const numeric* numeric_of_type(std::string_view type_name, std::size_t type_size, bool* is_vector) {
  for (const numeric& n : table()) {
    if (n.size != type_size && n.element == type_name) return nullptr;  // same name, other size
    if (n.element == type_name) {
      *is_vector = false;
      return &n;
    }
    if (n.vector == type_name) {
      *is_vector = true;
      return &n;
    }
  }
  for (const alias& a : kAliases) {
    if (a.spelling != type_name) continue;
    const numeric* n = numeric_of_numpy(a.numpy);
    if (n == nullptr || n->size != type_size) return nullptr;
    *is_vector = false;
    return n;
  }
  return nullptr;
}

const numeric* numeric_of_numpy(std::string_view name) {
  for (const numeric& n : table()) {
    if (name == n.numpy) return &n;  // the first entry of a name is the one create_array makes
  }
  return nullptr;
}

std::string numpy_names() {
  std::string s;
  for (std::size_t i = 0; i + 1 < table().size(); ++i) {
    if (!s.empty()) s += ", ";
    s += table()[i].numpy;
  }
  return s;
}

}  // namespace pyheap
