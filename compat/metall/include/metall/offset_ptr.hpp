// metall/offset_ptr.hpp (pheap's Metall compatibility layer) — the pointer to store inside the
// heap, and the conversion back to a raw pointer.
#pragma once

#include <memory>

#include <boost/interprocess/offset_ptr.hpp>

namespace metall {

// boost::interprocess::offset_ptr, as in Metall: relative to its own address, so it stays valid
// when the datastore is reopened at another address.
template <class T>
using offset_ptr = boost::interprocess::offset_ptr<T>;

// The address a raw or fancy pointer (offset_ptr, the allocators' pointer) points to.
template <class Pointer>
inline auto* to_raw_pointer(const Pointer& p) noexcept {
  return std::to_address(p);
}
template <class T>
inline T* to_raw_pointer(T* p) noexcept {
  return p;
}
template <class T>
inline T* to_raw_pointer(const offset_ptr<T>& p) noexcept {
  return p.get();
}

}  // namespace metall
