// src/heap/heap_header.hpp — the byte layout of a heap inside its region.
//
// A heap occupies one contiguous region [base, base + capacity) that reads zeros where never
// written (the pager region, or anonymous memory in unit tests). EVERYTHING the allocator and
// the object directory need lives inside that region and refers to other parts of it by
// offset from `base`, never by raw pointer, so:
//   * one pager flush (one store commit) covers data and metadata together, and
//   * reopening is O(1) in heap size: attach() validates the header and is done.
//
// Region layout (all offsets from base; every area starts page-aligned, 4 KiB):
//
//   [0, header_bytes)            heap_header (below)
//   [dir_off, +num_chunks*16)    chunk directory: one chunk_entry per chunk
//   [map_off, +num_chunks/8)     chunk-used bitmap: bit c = 1 iff chunk c is not free
//   [bits_off, +num_chunks*bits_stride)
//                                per-chunk slot bitsets (two levels, see slot_bitset.hpp);
//                                only chunks holding small objects use theirs
//   [data_off, capacity)         chunks of chunk_size bytes; data_off is chunk-aligned
//
// Never-touched parts of the directory/bitmap/bitset areas are holes: a 1 TiB heap with one
// chunk in use costs a few pages of metadata, not 1 TiB / 60.
//
// Alignment guarantee: the region base is only guaranteed to be aligned to
// `guaranteed_base_alignment` (4 KiB, the smallest page size the pager supports), so objects
// are aligned to at most that many bytes *as offsets*; larger alignments are refused.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace pheap::heap {

inline constexpr std::size_t guaranteed_base_alignment = 4096;
// Heap formats: 1 (pheap 0.1.0) did not index anonymous objects; 2 lists them in the object
// table. A format-1 heap opens (read-only: as it is; read-write: upgraded in place to 2 at
// attach, durable with the next flush), and its anonymous objects stay counted but unlisted
// (heap_header::num_anonymous_unlisted).
inline constexpr std::uint32_t heap_format_version = 2;
inline constexpr std::uint32_t oldest_heap_format = 1;
inline constexpr char header_magic[8] = {'P', 'H', 'E', 'A', 'P', 'H', 'D', 'R'};
inline constexpr std::size_t max_bins = 128;
inline constexpr std::uint64_t min_chunk_size = 64 * 1024;
inline constexpr std::uint64_t max_chunk_size = 1ull << 30;
inline constexpr std::uint64_t max_chunks = 0xFFFFFFF0ull;  // chunk numbers fit in uint32

enum class chunk_kind : std::uint8_t {
  free = 0,        // unused; its bitmap bit is 0
  small = 1,       // slots of one size class; `bin` says which, `used` counts occupied slots
  large_head = 2,  // first chunk of a run of `used` chunks holding one large object
  large_body = 3,  // chunk `used` positions after its run's head
};

// 16 bytes per chunk. Fields are separate scalars on purpose: a freeing thread reads
// kind/bin of a chunk that holds a live object without the bin lock while another thread
// updates used/next/prev under it; distinct memory locations, so no data race.
struct chunk_entry {
  chunk_kind kind;
  std::uint8_t bin;
  std::uint16_t reserved;
  std::uint32_t used;  // small: occupied slots; large_head: run length; large_body: distance to head
  std::uint32_t next;  // small chunk in its bin's non-full list: next chunk + 1 (0 = end)
  std::uint32_t prev;  // previous chunk + 1 (0 = this is the list head)
};
static_assert(sizeof(chunk_entry) == 16);

// The persistent header at region offset 0. Lock discipline (DRAM locks, see
// segment_allocator.hpp): bin_head[b] ↔ bin lock b; chunk bookkeeping ↔ chunk lock; the
// object-directory fields ↔ directory lock. All written only under the world lock (shared),
// never while a flush holds it exclusively.
struct heap_header {
  char magic[8];
  std::uint32_t format_version;
  std::uint32_t header_bytes;

  // Geometry, fixed at creation.
  std::uint64_t capacity;
  std::uint64_t chunk_size;
  std::uint32_t chunk_shift;
  std::uint32_t num_bins;  // small size classes
  std::uint64_t num_chunks;
  std::uint64_t dir_off;
  std::uint64_t map_off;
  std::uint64_t bits_off;
  std::uint64_t bits_stride;
  std::uint64_t data_off;

  // Chunk bookkeeping (chunk lock).
  std::uint64_t chunks_in_use;  // entries whose kind != free
  std::uint64_t chunk_high;     // 1 + highest chunk ever used; chunks >= chunk_high are free
  std::uint64_t free_hint;      // every chunk below free_hint is in use

  // Non-full small chunks per bin (bin lock b): chunk number + 1, 0 = empty list.
  std::uint32_t bin_head[max_bins];

  // Object directory (directory lock).
  std::uint64_t table_off;   // open-addressing table of named, unique and anonymous objects, 0 = none
  std::uint64_t table_cap;   // slots (power of two)
  std::uint64_t table_live;  // occupied slots
  std::uint64_t table_tomb;  // tombstones
  std::uint64_t num_named;
  std::uint64_t num_unique;
  std::uint64_t num_anonymous;
  // Anonymous objects built under format 1 (not in the table): set when a read-write open
  // upgrades the heap, decremented as they are destroyed. Zero for heaps created as format 2.
  std::uint64_t num_anonymous_unlisted;

  std::uint64_t reserved[31];
};

// Offsets inside the region (area starts) are computed by compute_layout().
struct layout {
  std::uint64_t header_bytes, dir_off, map_off, bits_off, bits_stride, data_off, num_chunks;
};

}  // namespace pheap::heap
