// pheap/object_info.hpp — what the object directory tells about a constructed object.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace pheap {

// Same names as Metall / Boost.Interprocess.
enum class instance_kind : std::uint8_t {
  named_kind = 1,      // construct<T>("name")
  unique_kind = 2,     // construct<T>(pheap::unique_instance): one per type, keyed by type name
  anonymous_kind = 3,  // construct<T>(pheap::anonymous_instance): no name, not findable
};

const char* to_string(instance_kind k) noexcept;

// A view of one directory entry. The string views point into the heap: valid until the object
// is destroyed, its description changes, or the manager closes.
struct object_info {
  std::string_view name;         // empty for anonymous objects; the type name for unique ones
  instance_kind kind;
  std::size_t length;            // number of elements (1 for a single object)
  std::string_view type_name;    // pheap::type_name<T>() at construction
  std::size_t type_size;         // sizeof(T)
  std::size_t type_align;        // alignof(T)
  std::string_view description;  // set_instance_description(); empty if never set
  void* value;                   // address of the first element
  std::uint64_t offset;          // its offset from the heap base (stable across reopen)
};

namespace detail {
// Type-erased element initializer used by manager::construct: builds n elements at storage;
// if one throws it destroys the ones already built and rethrows.
using init_fn = void (*)(void* ctx, void* storage, std::size_t n);
// Destroys n elements at storage.
using destroy_fn = void (*)(void* storage, std::size_t n);

struct construct_result {
  void* ptr = nullptr;
  std::size_t length = 0;
  bool constructed = false;  // false: found an existing object, or the name was taken
};
}  // namespace detail

}  // namespace pheap
