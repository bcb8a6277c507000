// src/heap/object_directory.hpp — named, unique and anonymous objects (all in the region).
//
// Every constructed object is one allocation laid out as
//     [name bytes][type-name bytes][pad][object_header (64 B)][element 0][element 1]...
// with the header immediately before the first element, so destroy_ptr(p) and the instance
// queries find it in O(1) from p. Named and unique objects are also indexed by an
// open-addressing hash table in the region (header.table_off; slots {hash, object offset};
// hash 0 = empty, 1 = tombstone), grown by rehashing into a fresh allocation at 70 % load and
// freed when it becomes empty (so all_memory_deallocated() can become true again).
// Anonymous objects are in the same table, hashed by their offset (they have no name), so they
// can be listed; never found by name. Heaps of format 1 did not index them: a read-write open
// upgrades the header to format 2 and counts the old ones in num_anonymous_unlisted (listed:
// num_anonymous - unlisted), which destroy_ptr decrements when it meets one.
//
// Construction protocol (exception safety + flush consistency): under the directory lock the
// name is checked and marked "pending" in a DRAM set and one table slot is reserved; the block
// is allocated and the user's constructors run WITHOUT the directory lock but WITH the world
// lock held shared (so a flush cannot commit a half-built object); then the entry is inserted.
// If a constructor throws, the already-built elements are destroyed by the caller's init
// callback, the block is freed and the pending mark dropped: no object, no name, no leak.
// A second constructor of a pending name waits for the first to finish (find_or_construct) or
// reports "exists" (construct). A constructor that constructs its own name -> error.
//
// Thread safety: every member is thread-safe except iteration (next_entry), which must not run
// concurrently with construct/destroy of the same kind.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "heap/segment_allocator.hpp"
#include "pheap/object_info.hpp"
#include "pheap/type_name.hpp"

namespace pheap::heap {

struct object_header {
  static constexpr std::uint32_t magic_value = 0x4F424A50;  // "PJBO"
  std::uint32_t magic;
  std::uint8_t kind;          // instance_kind
  std::uint8_t reserved[3];
  std::uint32_t prefix;       // object offset - block offset
  std::uint32_t name_len;     // name bytes at block offset
  std::uint64_t length;       // elements
  std::uint32_t type_len;     // type-name bytes right after the name
  std::uint32_t desc_len;
  std::uint64_t type_size;
  std::uint64_t type_align;
  std::uint64_t desc_off;     // separate allocation, 0 if no description
  std::uint64_t reserved2;
};
static_assert(sizeof(object_header) == 64);

using detail::construct_result;
using detail::destroy_fn;
using detail::init_fn;

class object_directory {
 public:
  static constexpr std::size_t max_name_length = 1 << 20;

  object_directory(segment_allocator& alloc, std::string path);

  // kind named: `name` is the user's name; unique: the type name; anonymous: ignored.
  // Throws std::bad_alloc when the heap is full, error(type_mismatch) when find_existing and
  // the existing object has another type, error(invalid_argument) for names too long or a
  // recursive construction of the same name, error(read_only) on read-only heaps.
  construct_result construct(instance_kind kind, std::string_view name, const type_identity& type,
                             std::size_t n, bool find_existing, init_fn init, void* ctx);

  // {nullptr, 0} when absent; error(type_mismatch) naming both types if present with another type.
  std::pair<void*, std::size_t> find(instance_kind kind, std::string_view name,
                                     const type_identity& type) const;

  // False when absent. error(type_mismatch) if present with another type.
  bool destroy(instance_kind kind, std::string_view name, const type_identity& type,
               destroy_fn dtor);
  // p must be the first element of an object constructed by this directory (any kind).
  // error(invalid_argument) otherwise, error(type_mismatch) if the object has another type.
  void destroy_ptr(const void* p, const type_identity& type, destroy_fn dtor);

  // Instance queries on a pointer returned by construct/find; error(invalid_argument) if p is
  // not such a pointer.
  object_info info(const void* p) const;
  void set_description(const void* p, std::string_view text);

  // Iteration over the table (any kind): returns the first occupied slot >= slot holding
  // `kind`, or table capacity when none. Not thread-safe against construct/destroy.
  std::uint64_t next_entry(instance_kind kind, std::uint64_t slot) const noexcept;
  std::uint64_t table_capacity() const noexcept { return h_.table_cap; }
  object_info entry_info(std::uint64_t slot) const;
  // The entry of (kind, name) of any type, or nullopt (anonymous objects have no name).
  std::optional<object_info> find_info(instance_kind kind, std::string_view name) const;

  std::uint64_t count(instance_kind kind) const noexcept;

  // Invariant checker (see segment_allocator::check for the locking rule).
  void check(std::vector<std::string>& problems) const;

 private:
  struct slot {
    std::uint64_t hash;
    std::uint64_t obj;
  };
  static std::uint64_t hash_of(instance_kind kind, std::string_view name) noexcept;
  static std::uint64_t anonymous_hash(std::uint64_t obj) noexcept;
  // Table slot index of the anonymous object at offset obj, or ~0. Directory lock held.
  std::uint64_t lookup_anonymous(std::uint64_t obj) const noexcept;
  // Anonymous objects not in the table (format-1 heaps; see the file comment).
  std::uint64_t unlisted_anonymous() const noexcept;
  slot* table() const noexcept;
  // Table slot index of (kind, name), or ~0. Directory lock held.
  std::uint64_t lookup(instance_kind kind, std::string_view name, std::uint64_t h) const noexcept;
  // Makes room for `extra` more entries at <= 70 % load (rehash/grow). Directory lock held.
  void reserve_slots(std::uint64_t extra);
  void insert(std::uint64_t h, std::uint64_t obj) noexcept;
  void erase_slot(std::uint64_t i) noexcept;
  // Frees the table when no entry is live and no construction has a slot reserved.
  void release_empty_table() noexcept;
  const object_header* header_of(const void* p, const char* op) const;
  object_info make_info(const object_header* hdr) const;
  std::string_view name_of(const object_header* hdr) const noexcept;
  std::string_view type_of(const object_header* hdr) const noexcept;
  void check_type(const object_header* hdr, const type_identity& type, const char* op) const;
  void free_object(object_header* hdr);
  std::byte* at(std::uint64_t off) const noexcept { return alloc_.base() + off; }

  segment_allocator& alloc_;
  heap_header& h_;
  std::string path_;
  mutable std::mutex mutex_;
  std::condition_variable pending_cv_;
  std::unordered_map<std::string, std::thread::id> pending_;  // kind byte + name
  std::uint64_t pending_anonymous_ = 0;  // anonymous constructions holding a reserved slot
};

}  // namespace pheap::heap
