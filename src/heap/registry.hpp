// src/heap/registry.hpp — process-wide map from a heap's header address to its live
// segment_allocator, used by pheap::allocator<T> (whose only state is an offset_ptr to the
// header). Lock-free lookups over a fixed table of 256 slots; registration fails with
// error(invalid_argument) when 256 heaps are open in one process.
#pragma once

namespace pheap::heap {

class segment_allocator;

void register_heap(const void* header, segment_allocator* alloc);
void unregister_heap(const void* header) noexcept;
segment_allocator* find_heap(const void* header) noexcept;

}  // namespace pheap::heap
