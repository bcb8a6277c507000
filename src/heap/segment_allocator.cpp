#include "heap/segment_allocator.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include "heap/slot_bitset.hpp"
#include "pheap/error.hpp"

namespace pheap::heap {

namespace {

std::uint64_t round_up(std::uint64_t x, std::uint64_t a) { return (x + a - 1) / a * a; }

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

layout segment_allocator::compute_layout(std::uint64_t capacity, std::uint64_t chunk_size) {
  if (!std::has_single_bit(chunk_size) || chunk_size < min_chunk_size ||
      chunk_size > max_chunk_size) {
    throw error(errc::invalid_argument, "", "create heap",
                "chunk size " + std::to_string(chunk_size) +
                    " is not a power of two between 64 KiB and 1 GiB");
  }
  layout l{};
  l.header_bytes = round_up(sizeof(heap_header), guaranteed_base_alignment);
  l.bits_stride = slot_bitset::bytes_for(chunk_size / 8);
  // Size metadata for the upper bound capacity / chunk_size, then count what is left.
  const std::uint64_t bound = std::min(capacity / chunk_size, max_chunks);
  l.dir_off = l.header_bytes;
  l.map_off = round_up(l.dir_off + bound * sizeof(chunk_entry), guaranteed_base_alignment);
  l.bits_off = round_up(l.map_off + (bound + 63) / 64 * 8, guaranteed_base_alignment);
  l.data_off = round_up(l.bits_off + bound * l.bits_stride, chunk_size);
  l.num_chunks = capacity > l.data_off ? (capacity - l.data_off) / chunk_size : 0;
  if (l.num_chunks == 0) {
    throw error(errc::invalid_argument, "", "create heap",
                "capacity " + std::to_string(capacity) + " is too small for chunk size " +
                    std::to_string(chunk_size) + " (minimum " +
                    std::to_string(round_up(l.header_bytes + 4 * guaranteed_base_alignment +
                                                l.bits_stride, chunk_size) + chunk_size) +
                    " bytes)");
  }
  return l;
}

void segment_allocator::format(std::byte* base, std::uint64_t capacity, std::uint64_t chunk_size) {
  const layout l = compute_layout(capacity, chunk_size);
  auto* h = reinterpret_cast<heap_header*>(base);
  std::memset(static_cast<void*>(h), 0, sizeof *h);
  std::memcpy(h->magic, header_magic, sizeof h->magic);
  h->format_version = heap_format_version;
  h->header_bytes = static_cast<std::uint32_t>(l.header_bytes);
  h->capacity = capacity;
  h->chunk_size = chunk_size;
  h->chunk_shift = static_cast<std::uint32_t>(std::countr_zero(chunk_size));
  h->num_bins = size_classes(chunk_size).count();
  h->num_chunks = l.num_chunks;
  h->dir_off = l.dir_off;
  h->map_off = l.map_off;
  h->bits_off = l.bits_off;
  h->bits_stride = l.bits_stride;
  h->data_off = l.data_off;
}

namespace {
const heap_header& validated(std::byte* base, std::uint64_t capacity, const std::string& path) {
  const auto* h = reinterpret_cast<const heap_header*>(base);
  if (std::memcmp(h->magic, header_magic, sizeof h->magic) != 0) {
    throw error(errc::not_a_datastore, path, "open heap", "heap header magic missing");
  }
  if (h->format_version > heap_format_version) {
    throw error(errc::newer_format, path, "open heap",
                "heap format version " + std::to_string(h->format_version) +
                    " is newer than this library's " + std::to_string(heap_format_version));
  }
  if (h->format_version < oldest_heap_format) {
    throw error(errc::corrupt, path, "open heap",
                "unknown heap format version " + std::to_string(h->format_version));
  }
  layout l{};
  try {
    l = segment_allocator::compute_layout(h->capacity, h->chunk_size);
  } catch (const error& e) {
    throw error(errc::corrupt, path, "open heap", std::string("bad heap geometry: ") + e.what());
  }
  if (h->capacity != capacity || l.num_chunks != h->num_chunks || l.dir_off != h->dir_off ||
      l.map_off != h->map_off || l.bits_off != h->bits_off || l.bits_stride != h->bits_stride ||
      l.data_off != h->data_off || h->header_bytes != l.header_bytes ||
      h->chunk_shift != static_cast<std::uint32_t>(std::countr_zero(h->chunk_size)) ||
      h->num_bins != size_classes(h->chunk_size).count()) {
    throw error(errc::corrupt, path, "open heap",
                "heap header geometry does not match the region (capacity " +
                    std::to_string(capacity) + ", header says " + std::to_string(h->capacity) + ")");
  }
  if (h->chunks_in_use > h->num_chunks || h->chunk_high > h->num_chunks ||
      h->free_hint > h->num_chunks) {
    throw error(errc::corrupt, path, "open heap", "chunk counters out of range");
  }
  return *h;
}
}  // namespace

segment_allocator::segment_allocator(std::byte* base, std::uint64_t capacity, bool read_only,
                                     const std::string& path)
    : base_(base),
      h_(const_cast<heap_header*>(&validated(base, capacity, path))),
      read_only_(read_only),
      path_(path),
      classes_(h_->chunk_size),
      dir_(base, h_),
      cache_(classes_),
      bin_mutex_(std::make_unique<std::mutex[]>(max_bins)) {}

segment_allocator::~segment_allocator() = default;

void segment_allocator::require_writable(const char* op) const {
  if (read_only_) throw error(errc::read_only, path_, op, "the heap is open read-only");
}

std::uint64_t segment_allocator::allocate(std::uint64_t bytes) {
  require_writable("allocate");
  if (bytes == 0) bytes = 1;
  auto once = [&] {
    return bytes <= classes_.max_small() ? allocate_small(size_classes::bin_of(bytes)) : allocate_large(bytes);
  };
  std::uint64_t off = once();
  // Out of chunks: free slots parked in caches may pin otherwise-empty chunks. Return them
  // to the bitsets (which releases empty chunks) and try once more.
  if (off == 0 && drain_caches() != 0) off = once();
  return off;
}

std::uint64_t segment_allocator::allocate_aligned(std::uint64_t bytes, std::uint64_t align) {
  require_writable("allocate_aligned");
  if (!std::has_single_bit(align) || align > guaranteed_base_alignment) return 0;
  if (bytes == 0) bytes = 1;
  if (align <= 16) return allocate(std::max(bytes, align));
  std::uint64_t off = allocate_aligned_once(bytes, align);
  if (off == 0 && drain_caches() != 0) off = allocate_aligned_once(bytes, align);
  return off;
}

std::uint64_t segment_allocator::allocate_aligned_once(std::uint64_t bytes, std::uint64_t align) {
  if (bytes > ~0ull - align) return 0;
  const std::uint64_t need = round_up(bytes, align);
  if (need > classes_.max_small()) return allocate_large(need);  // chunk-aligned
  for (std::uint32_t b = size_classes::bin_of(need); b < classes_.count(); ++b) {
    if (classes_.size(b) % align == 0) return allocate_small(b);
  }
  return allocate_large(need);
}

std::uint64_t segment_allocator::allocate_small(std::uint32_t bin) {
  if (cache_.cacheable(bin)) {
    const std::uint32_t shard = cache_.my_shard();
    if (const std::uint64_t off = cache_.pop(shard, bin)) return off;
    // Miss: refill half a cache.
    std::uint64_t batch[256];
    const std::size_t want = std::max<std::uint32_t>(1, cache_.capacity(bin) / 2);
    std::size_t got;
    {
      world_lock::shared w(world_);
      got = refill(bin, batch, want);
      if (got == 0) return 0;
      const std::size_t taken = cache_.push_many(shard, bin, batch + 1, got - 1);
      if (taken + 1 < got) release_slots(bin, batch + 1 + taken, got - 1 - taken);
    }
    return batch[0];
  }
  world_lock::shared w(world_);
  std::uint64_t off = 0;
  return refill(bin, &off, 1) == 1 ? off : 0;
}

std::size_t segment_allocator::refill(std::uint32_t bin, std::uint64_t* out, std::size_t k) {
  const std::uint64_t size = classes_.size(bin);
  const std::uint64_t slots = classes_.slots(bin);
  std::lock_guard g(bin_mutex_[bin]);
  std::size_t got = 0;
  while (got < k) {
    std::uint32_t head = h_->bin_head[bin];
    if (head == 0) {
      std::uint64_t c;
      {
        std::lock_guard cg(chunk_mutex_);
        c = dir_.allocate_run(1);
        if (c == chunk_directory::none) break;
        chunk_entry& e = dir_.entry(c);
        e.kind = chunk_kind::small;
        e.bin = static_cast<std::uint8_t>(bin);
        e.used = 0;
      }
      slot_bitset(bits_area(c), slots).init();
      dir_.list_push(bin, c);
      head = static_cast<std::uint32_t>(c + 1);
    }
    const std::uint64_t c = head - 1;
    chunk_entry& e = dir_.entry(c);
    slot_bitset bs(bits_area(c), slots);
    const std::uint64_t cbase = chunk_off(c);
    while (got < k) {
      const std::uint64_t s = bs.acquire();
      if (s == slot_bitset::none) break;
      ++e.used;
      out[got++] = cbase + s * size;
    }
    if (e.used == slots) dir_.list_remove(bin, c);
  }
  return got;
}

void segment_allocator::release_slots(std::uint32_t bin, const std::uint64_t* offs, std::size_t n) {
  std::lock_guard g(bin_mutex_[bin]);
  for (std::size_t i = 0; i < n; ++i) release_slot_locked(bin, offs[i]);
}

void segment_allocator::release_slot_locked(std::uint32_t bin, std::uint64_t off) {
  const std::uint64_t c = chunk_of(off);
  const std::uint64_t size = classes_.size(bin);
  const std::uint64_t slots = classes_.slots(bin);
  chunk_entry& e = dir_.entry(c);
  const std::uint64_t slot = (off - chunk_off(c)) / size;
  slot_bitset bs(bits_area(c), slots);
  if (!bs.test(slot)) bad_free(off, "slot is not allocated (double free?)");
  bs.release(slot);
  const bool was_full = e.used == slots;
  --e.used;
  if (e.used == 0) {
    if (!was_full) dir_.list_remove(bin, c);
    std::lock_guard cg(chunk_mutex_);
    dir_.release_run(c, 1);
    if (release_hook_) release_hook_(chunk_off(c), h_->chunk_size);
  } else if (was_full) {
    dir_.list_push(bin, c);
  }
}

std::uint64_t segment_allocator::allocate_large(std::uint64_t bytes) {
  const std::uint64_t n = (bytes + h_->chunk_size - 1) >> h_->chunk_shift;
  if (n == 0) return 0;  // overflowed
  world_lock::shared w(world_);
  std::lock_guard cg(chunk_mutex_);
  const std::uint64_t c = dir_.allocate_run(n);
  if (c == chunk_directory::none) return 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    chunk_entry& e = dir_.entry(c + i);
    e.kind = i == 0 ? chunk_kind::large_head : chunk_kind::large_body;
    e.used = static_cast<std::uint32_t>(i == 0 ? n : i);
  }
  return chunk_off(c);
}

void segment_allocator::bad_free(std::uint64_t off, const char* why) const {
  throw error(errc::invalid_argument, path_, "deallocate", "offset " + hex(off) + ": " + why);
}

void segment_allocator::deallocate(std::uint64_t off) {
  require_writable("deallocate");
  if (off < h_->data_off || off >= h_->data_off + (h_->num_chunks << h_->chunk_shift)) {
    bad_free(off, "not inside the heap's data area");
  }
  const std::uint64_t c = chunk_of(off);
  const chunk_entry& e = dir_.entry(c);
  switch (e.kind) {
    case chunk_kind::small: {
      const std::uint32_t bin = e.bin;
      if ((off - chunk_off(c)) % classes_.size(bin) != 0) bad_free(off, "not the start of a slot");
      if (cache_.cacheable(bin)) {
        thread_local std::vector<std::uint64_t> spill;
        if (cache_.push(cache_.my_shard(), bin, off, spill)) return;
        world_lock::shared w(world_);
        release_slots(bin, spill.data(), spill.size());
        return;
      }
      world_lock::shared w(world_);
      release_slots(bin, &off, 1);
      return;
    }
    case chunk_kind::large_head:
      if (off != chunk_off(c)) bad_free(off, "not the start of a large object");
      free_large(c);
      return;
    case chunk_kind::free: bad_free(off, "chunk is free");
    case chunk_kind::large_body: bad_free(off, "inside a large object");
  }
  bad_free(off, "corrupt chunk entry");
}

void segment_allocator::free_large(std::uint64_t c) {
  world_lock::shared w(world_);
  std::lock_guard cg(chunk_mutex_);
  const std::uint64_t n = dir_.entry(c).used;
  dir_.release_run(c, n);
  if (release_hook_) release_hook_(chunk_off(c), n << h_->chunk_shift);
}

std::uint64_t segment_allocator::usable_size(std::uint64_t off) const {
  const std::uint64_t c = chunk_of(off);
  const chunk_entry& e = dir_.entry(c);
  if (e.kind == chunk_kind::small) return classes_.size(e.bin);
  if (e.kind == chunk_kind::large_head) return static_cast<std::uint64_t>(e.used) << h_->chunk_shift;
  return 0;
}

std::uint64_t segment_allocator::drain_caches() {
  world_lock::shared w(world_);  // no-op when the caller holds it (flush holds it exclusive)
  std::vector<std::vector<std::uint64_t>> drained;
  cache_.drain(drained);
  std::uint64_t n = 0;
  for (std::uint32_t b = 0; b < drained.size(); ++b) {
    if (drained[b].empty()) continue;
    n += drained[b].size();
    release_slots(b, drained[b].data(), drained[b].size());
  }
  return n;
}

bool segment_allocator::all_memory_deallocated() {
  if (read_only_) return h_->chunks_in_use == 0;
  world_lock::exclusive w(world_);
  drain_caches();
  return h_->chunks_in_use == 0;
}

std::uint64_t segment_allocator::used_extent() const noexcept {
  return h_->data_off + (h_->chunk_high << h_->chunk_shift);
}

std::uint64_t segment_allocator::used_extent_of(const std::byte* header, std::size_t len,
                                                std::uint64_t capacity) noexcept {
  if (len < sizeof(heap_header)) return 0;
  try {
    const heap_header& h = validated(const_cast<std::byte*>(header), capacity, "");
    return std::min(capacity, h.data_off + (h.chunk_high << h.chunk_shift));
  } catch (...) {
    return 0;
  }
}

allocator_usage segment_allocator::usage() const {
  allocator_usage u;
  u.chunk_size = h_->chunk_size;
  u.num_chunks = h_->num_chunks;
  u.chunks_in_use = h_->chunks_in_use;
  u.cached_objects = cache_.cached_objects();
  const std::uint64_t high = h_->chunk_high;
  for (std::uint64_t c = 0; c < high; ++c) {
    const chunk_entry& e = dir_.entry(c);
    if (e.kind == chunk_kind::small) {
      ++u.small_chunks;
      u.small_bytes += static_cast<std::uint64_t>(e.used) * classes_.size(e.bin);
    } else if (e.kind == chunk_kind::large_head || e.kind == chunk_kind::large_body) {
      ++u.large_chunks;
      u.large_bytes += h_->chunk_size;
    }
  }
  return u;
}

bool segment_allocator::is_live_range(std::uint64_t off, std::uint64_t len) const {
  if (off < h_->data_off || len == 0) return false;
  const std::uint64_t end_area = h_->data_off + (h_->num_chunks << h_->chunk_shift);
  if (off >= end_area || len > end_area - off) return false;
  std::uint64_t c = chunk_of(off);
  const chunk_entry* e = &dir_.entry(c);
  if (e->kind == chunk_kind::large_body) {
    c -= e->used;
    e = &dir_.entry(c);
  }
  if (e->kind == chunk_kind::large_head) {
    const std::uint64_t start = chunk_off(c), size = static_cast<std::uint64_t>(e->used) << h_->chunk_shift;
    return off + len <= start + size;
  }
  if (e->kind != chunk_kind::small || e->bin >= classes_.count()) return false;
  const std::uint64_t size = classes_.size(e->bin);
  const std::uint64_t slot = (off - chunk_off(c)) / size;
  if (slot >= classes_.slots(e->bin)) return false;
  const std::uint64_t slot_start = chunk_off(c) + slot * size;
  if (off + len > slot_start + size) return false;
  return slot_bitset(bits_area(c), classes_.slots(e->bin)).test(slot);
}

void segment_allocator::check(std::vector<std::string>& problems) const {
  auto bad = [&](std::uint64_t c, const std::string& what) {
    problems.push_back("chunk " + std::to_string(c) + ": " + what);
  };
  const std::uint64_t total = h_->num_chunks;
  std::uint64_t in_use = 0;
  std::vector<std::uint8_t> listed(total, 0);
  // Bin lists: well-formed, acyclic, members are small chunks of that bin and not full/empty.
  for (std::uint32_t b = 0; b < max_bins; ++b) {
    std::uint32_t cur = h_->bin_head[b];
    if (b >= h_->num_bins) {
      if (cur != 0) problems.push_back("bin " + std::to_string(b) + ": list head beyond num_bins");
      continue;
    }
    std::uint32_t prev = 0;
    std::uint64_t steps = 0;
    while (cur != 0) {
      const std::uint64_t c = cur - 1;
      if (c >= total) {
        problems.push_back("bin " + std::to_string(b) + ": list points past the last chunk");
        break;
      }
      if (listed[c]) {
        problems.push_back("bin " + std::to_string(b) + ": chunk " + std::to_string(c) +
                           " listed twice (cycle or shared)");
        break;
      }
      listed[c] = 1;
      const chunk_entry& e = dir_.entry(c);
      if (e.kind != chunk_kind::small || e.bin != b) bad(c, "in bin " + std::to_string(b) + "'s list but not a small chunk of that bin");
      if (e.prev != prev) bad(c, "prev link broken");
      if (e.kind == chunk_kind::small && e.bin == b && (e.used == 0 || e.used >= classes_.slots(b))) {
        bad(c, "listed as non-full but used = " + std::to_string(e.used));
      }
      prev = cur;
      cur = e.next;
      if (++steps > total) break;
    }
  }
  for (std::uint64_t c = 0; c < total; ++c) {
    const chunk_entry& e = dir_.entry(c);
    const bool used = e.kind != chunk_kind::free;
    if (used) ++in_use;
    if (dir_.used_bit(c) != used) bad(c, "bitmap bit disagrees with the directory entry");
    if (c >= h_->chunk_high && used) bad(c, "in use at or above chunk_high");
    if (c < h_->free_hint && !used) bad(c, "free below free_hint");
    switch (e.kind) {
      case chunk_kind::free:
        if (e.bin != 0 || e.used != 0 || e.next != 0 || e.prev != 0) bad(c, "free entry not zeroed");
        break;
      case chunk_kind::small: {
        if (e.bin >= h_->num_bins) {
          bad(c, "bin " + std::to_string(e.bin) + " out of range");
          break;
        }
        const std::uint64_t slots = classes_.slots(e.bin);
        std::uint64_t allocated = 0;
        if (!slot_bitset(bits_area(c), slots).check(&allocated)) bad(c, "slot bitset structure broken");
        else if (allocated != e.used) {
          bad(c, "used = " + std::to_string(e.used) + " but the bitset has " +
                     std::to_string(allocated) + " slots allocated");
        }
        if (e.used == 0) bad(c, "empty small chunk not released");
        const bool should_list = e.used > 0 && e.used < slots;
        if (should_list != static_cast<bool>(listed[c])) {
          bad(c, should_list ? "non-full chunk missing from its bin list" : "full chunk still linked");
        }
        break;
      }
      case chunk_kind::large_head: {
        const std::uint64_t n = e.used;
        if (n == 0 || c + n > total) {
          bad(c, "large run length " + std::to_string(n) + " out of range");
          break;
        }
        for (std::uint64_t i = 1; i < n; ++i) {
          const chunk_entry& b = dir_.entry(c + i);
          if (b.kind != chunk_kind::large_body || b.used != i) {
            bad(c + i, "large body entry does not point back to head " + std::to_string(c));
          }
        }
        break;
      }
      case chunk_kind::large_body: {
        if (e.used == 0 || e.used > c || dir_.entry(c - e.used).kind != chunk_kind::large_head ||
            dir_.entry(c - e.used).used <= e.used) {
          bad(c, "orphan large body entry");
        }
        break;
      }
      default:
        bad(c, "unknown chunk kind " + std::to_string(static_cast<int>(e.kind)));
    }
  }
  if (in_use != h_->chunks_in_use) {
    problems.push_back("header: chunks_in_use = " + std::to_string(h_->chunks_in_use) +
                       " but " + std::to_string(in_use) + " chunks are in use");
  }
}

}  // namespace pheap::heap
