#include "heap/object_directory.hpp"

#include <bit>
#include <cstring>
#include <new>

#include "pheap/error.hpp"

namespace pheap {

const char* to_string(instance_kind k) noexcept {
  switch (k) {
    case instance_kind::named_kind: return "named";
    case instance_kind::unique_kind: return "unique";
    case instance_kind::anonymous_kind: return "anonymous";
  }
  return "unknown";
}

}  // namespace pheap

namespace pheap::heap {

namespace {
constexpr std::uint64_t none = ~0ull;
constexpr std::uint64_t empty_hash = 0, tomb_hash = 1;

std::uint64_t round_up(std::uint64_t x, std::uint64_t a) { return (x + a - 1) / a * a; }

std::string describe(std::string_view name, std::size_t size, std::size_t align) {
  return std::string(name) + " (size " + std::to_string(size) + ", align " + std::to_string(align) + ")";
}
}  // namespace

object_directory::object_directory(segment_allocator& alloc, std::string path)
    : alloc_(alloc), h_(alloc.header()), path_(std::move(path)) {
  if (!alloc_.read_only() && h_.format_version < heap_format_version) {
    // Format 1 -> 2 (file comment): its anonymous objects are not in the table. Durable with
    // the next flush, together with the root record's heap format (manager attach).
    h_.num_anonymous_unlisted = h_.num_anonymous;
    h_.format_version = heap_format_version;
  }
}

std::uint64_t object_directory::unlisted_anonymous() const noexcept {
  return h_.format_version < heap_format_version ? h_.num_anonymous : h_.num_anonymous_unlisted;
}

std::uint64_t object_directory::hash_of(instance_kind kind, std::string_view name) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&h](unsigned char c) {
    h ^= c;
    h *= 0x100000001b3ull;
  };
  mix(static_cast<unsigned char>(kind));
  for (char c : name) mix(static_cast<unsigned char>(c));
  h ^= h >> 29;
  return h < 2 ? h + 2 : h;
}

std::uint64_t object_directory::anonymous_hash(std::uint64_t obj) noexcept {
  char bytes[sizeof obj];
  std::memcpy(bytes, &obj, sizeof obj);
  return hash_of(instance_kind::anonymous_kind, std::string_view(bytes, sizeof bytes));
}

object_directory::slot* object_directory::table() const noexcept {
  return reinterpret_cast<slot*>(at(h_.table_off));
}

std::string_view object_directory::name_of(const object_header* hdr) const noexcept {
  const auto* block = reinterpret_cast<const char*>(hdr) + sizeof(object_header) - hdr->prefix;
  return {block, hdr->name_len};
}

std::string_view object_directory::type_of(const object_header* hdr) const noexcept {
  const auto* block = reinterpret_cast<const char*>(hdr) + sizeof(object_header) - hdr->prefix;
  return {block + hdr->name_len, hdr->type_len};
}

std::uint64_t object_directory::lookup(instance_kind kind, std::string_view name,
                                       std::uint64_t h) const noexcept {
  const std::uint64_t cap = h_.table_cap;
  if (cap == 0) return none;
  const slot* t = table();
  for (std::uint64_t i = h & (cap - 1), n = 0; n < cap; i = (i + 1) & (cap - 1), ++n) {
    if (t[i].hash == empty_hash) return none;
    if (t[i].hash != h) continue;
    const auto* hdr = reinterpret_cast<const object_header*>(at(t[i].obj) - sizeof(object_header));
    if (hdr->kind == static_cast<std::uint8_t>(kind) && name_of(hdr) == name) return i;
  }
  return none;
}

std::uint64_t object_directory::lookup_anonymous(std::uint64_t obj) const noexcept {
  const std::uint64_t cap = h_.table_cap;
  if (cap == 0) return none;
  const std::uint64_t h = anonymous_hash(obj);
  const slot* t = table();
  for (std::uint64_t i = h & (cap - 1), n = 0; n < cap; i = (i + 1) & (cap - 1), ++n) {
    if (t[i].hash == empty_hash) return none;
    if (t[i].hash == h && t[i].obj == obj) return i;
  }
  return none;
}

void object_directory::insert(std::uint64_t h, std::uint64_t obj) noexcept {
  const std::uint64_t cap = h_.table_cap;
  slot* t = table();
  std::uint64_t i = h & (cap - 1);
  while (t[i].hash != empty_hash && t[i].hash != tomb_hash) i = (i + 1) & (cap - 1);
  if (t[i].hash == tomb_hash) --h_.table_tomb;
  t[i] = {h, obj};
  ++h_.table_live;
}

void object_directory::reserve_slots(std::uint64_t extra) {
  const std::uint64_t cap = h_.table_cap;
  if (cap != 0 && (h_.table_live + h_.table_tomb + extra) * 10 <= cap * 7) return;
  std::uint64_t new_cap = 16;
  while ((h_.table_live + extra) * 10 > new_cap * 7 / 2) new_cap *= 2;  // land at <= 35 % load
  const std::uint64_t off = alloc_.allocate_aligned(new_cap * sizeof(slot), 16);
  if (off == 0) throw std::bad_alloc();
  std::memset(at(off), 0, new_cap * sizeof(slot));
  const std::uint64_t old_off = h_.table_off;
  const slot* old = cap ? table() : nullptr;
  auto* fresh = reinterpret_cast<slot*>(at(off));
  for (std::uint64_t i = 0; i < cap; ++i) {
    if (old[i].hash < 2) continue;
    std::uint64_t j = old[i].hash & (new_cap - 1);
    while (fresh[j].hash != empty_hash) j = (j + 1) & (new_cap - 1);
    fresh[j] = old[i];
  }
  h_.table_off = off;
  h_.table_cap = new_cap;
  h_.table_tomb = 0;
  if (old_off != 0) alloc_.deallocate(old_off);
}

void object_directory::erase_slot(std::uint64_t i) noexcept {
  table()[i] = {tomb_hash, 0};
  --h_.table_live;
  ++h_.table_tomb;
  release_empty_table();
}

void object_directory::release_empty_table() noexcept {
  if (h_.table_off == 0 || h_.table_live != 0 || !pending_.empty() || pending_anonymous_ != 0) return;
  const std::uint64_t off = h_.table_off;
  h_.table_off = h_.table_cap = h_.table_tomb = 0;
  alloc_.deallocate(off);
}

void object_directory::check_type(const object_header* hdr, const type_identity& type,
                                  const char* op) const {
  if (type_of(hdr) == type.name && hdr->type_size == type.size && hdr->type_align == type.align) {
    return;
  }
  std::string who = hdr->kind == static_cast<std::uint8_t>(instance_kind::anonymous_kind)
                        ? std::string("anonymous object")
                        : "object '" + std::string(name_of(hdr)) + "'";
  throw error(errc::type_mismatch, path_, op,
              who + " has type " + describe(type_of(hdr), hdr->type_size, hdr->type_align) +
                  ", requested as " + describe(type.name, type.size, type.align));
}

construct_result object_directory::construct(instance_kind kind, std::string_view name,
                                             const type_identity& type, std::size_t n,
                                             bool find_existing, init_fn init, void* ctx) {
  if (alloc_.read_only()) throw error(errc::read_only, path_, "construct", "the heap is open read-only");
  const bool named = kind != instance_kind::anonymous_kind;  // unique objects are named by their type
  if (!named) name = {};
  if (named && name.empty()) throw error(errc::invalid_argument, path_, "construct", "empty object name");
  if (name.size() > max_name_length || type.name.size() > max_name_length) {
    throw error(errc::invalid_argument, path_, "construct", "object or type name longer than 1 MiB");
  }
  const std::uint64_t align = std::max<std::uint64_t>(type.align, 16);
  if (align > guaranteed_base_alignment) {
    throw error(errc::invalid_argument, path_, "construct",
                "type " + std::string(type.name) + " needs alignment " + std::to_string(type.align) +
                    " (maximum 4096)");
  }

  world_lock::shared world(alloc_.world());
  std::string key;
  std::uint64_t h = 0;
  if (!named) {
    std::lock_guard lk(mutex_);
    reserve_slots(pending_.size() + pending_anonymous_ + 1);
    ++pending_anonymous_;
  } else {
    key.reserve(name.size() + 1);
    key.push_back(static_cast<char>(kind));
    key.append(name);
    h = hash_of(kind, name);
    std::unique_lock lk(mutex_);
    for (;;) {
      const std::uint64_t i = lookup(kind, name, h);
      if (i != none) {
        if (!find_existing) return {};
        const std::uint64_t obj = table()[i].obj;
        const auto* hdr = reinterpret_cast<const object_header*>(at(obj) - sizeof(object_header));
        check_type(hdr, type, "find_or_construct");
        return {at(obj), static_cast<std::size_t>(hdr->length), false};
      }
      auto it = pending_.find(key);
      if (it == pending_.end()) break;
      if (it->second == std::this_thread::get_id()) {
        throw error(errc::invalid_argument, path_, "construct",
                    "object '" + std::string(name) + "' is constructed recursively from its own constructor");
      }
      if (!find_existing) return {};
      pending_cv_.wait(lk);
    }
    reserve_slots(pending_.size() + pending_anonymous_ + 1);
    pending_.emplace(key, std::this_thread::get_id());
  }
  auto drop_pending = [&]() noexcept {
    {
      std::lock_guard lk(mutex_);
      if (named) pending_.erase(key);
      else --pending_anonymous_;
      release_empty_table();
    }
    if (named) pending_cv_.notify_all();
  };

  // Block: [name][type name][pad][header][elements]
  const std::uint64_t prefix = round_up(name.size() + type.name.size() + sizeof(object_header), align);
  std::uint64_t block = 0;
  if (type.size == 0 || n <= (~0ull - prefix) / type.size) {
    block = alloc_.allocate_aligned(prefix + n * type.size, align);
  }
  if (block == 0) {
    drop_pending();
    throw std::bad_alloc();
  }
  const std::uint64_t obj = block + prefix;
  if (!name.empty()) std::memcpy(at(block), name.data(), name.size());
  if (!type.name.empty()) std::memcpy(at(block) + name.size(), type.name.data(), type.name.size());
  auto* hdr = reinterpret_cast<object_header*>(at(obj) - sizeof(object_header));
  *hdr = object_header{};
  hdr->magic = object_header::magic_value;
  hdr->kind = static_cast<std::uint8_t>(kind);
  hdr->prefix = static_cast<std::uint32_t>(prefix);
  hdr->name_len = static_cast<std::uint32_t>(name.size());
  hdr->length = n;
  hdr->type_len = static_cast<std::uint32_t>(type.name.size());
  hdr->type_size = type.size;
  hdr->type_align = type.align;
  try {
    init(ctx, at(obj), n);
  } catch (...) {
    hdr->magic = 0;
    alloc_.deallocate(block);
    drop_pending();
    throw;
  }
  {
    std::lock_guard lk(mutex_);
    switch (kind) {
      case instance_kind::named_kind: ++h_.num_named; break;
      case instance_kind::unique_kind: ++h_.num_unique; break;
      case instance_kind::anonymous_kind: ++h_.num_anonymous; break;
    }
    if (named) {
      insert(h, obj);
      pending_.erase(key);
    } else {
      insert(anonymous_hash(obj), obj);
      --pending_anonymous_;
    }
  }
  if (named) pending_cv_.notify_all();
  return {at(obj), n, true};
}

std::pair<void*, std::size_t> object_directory::find(instance_kind kind, std::string_view name,
                                                     const type_identity& type) const {
  if (kind == instance_kind::anonymous_kind) return {nullptr, 0};
  const std::uint64_t h = hash_of(kind, name);
  std::lock_guard lk(mutex_);
  const std::uint64_t i = lookup(kind, name, h);
  if (i == none) return {nullptr, 0};
  const std::uint64_t obj = table()[i].obj;
  const auto* hdr = reinterpret_cast<const object_header*>(at(obj) - sizeof(object_header));
  check_type(hdr, type, "find");
  return {at(obj), static_cast<std::size_t>(hdr->length)};
}

void object_directory::free_object(object_header* hdr) {
  const std::uint64_t obj = static_cast<std::uint64_t>(reinterpret_cast<std::byte*>(hdr + 1) - alloc_.base());
  const std::uint64_t block = obj - hdr->prefix;
  const std::uint64_t desc = hdr->desc_off;
  hdr->magic = 0;
  if (desc != 0) alloc_.deallocate(desc);
  alloc_.deallocate(block);
}

bool object_directory::destroy(instance_kind kind, std::string_view name, const type_identity& type,
                               destroy_fn dtor) {
  if (alloc_.read_only()) throw error(errc::read_only, path_, "destroy", "the heap is open read-only");
  if (kind == instance_kind::anonymous_kind) return false;
  world_lock::shared world(alloc_.world());
  object_header* hdr;
  {
    std::lock_guard lk(mutex_);
    const std::uint64_t i = lookup(kind, name, hash_of(kind, name));
    if (i == none) return false;
    hdr = reinterpret_cast<object_header*>(at(table()[i].obj) - sizeof(object_header));
    check_type(hdr, type, "destroy");
    erase_slot(i);
    if (kind == instance_kind::named_kind) --h_.num_named;
    else --h_.num_unique;
  }
  dtor(hdr + 1, hdr->length);
  free_object(hdr);
  return true;
}

const object_header* object_directory::header_of(const void* p, const char* op) const {
  const auto* b = static_cast<const std::byte*>(p);
  const std::byte* base = alloc_.base();
  const std::uint64_t lo = h_.data_off + sizeof(object_header);
  const std::uint64_t hi = h_.data_off + (h_.num_chunks << h_.chunk_shift);
  if (b < base + lo || b >= base + hi || (reinterpret_cast<std::uintptr_t>(b) % 16) != 0) {
    throw error(errc::invalid_argument, path_, op, "pointer does not point into this heap's objects");
  }
  const auto* hdr = reinterpret_cast<const object_header*>(b - sizeof(object_header));
  if (hdr->magic != object_header::magic_value || hdr->kind < 1 || hdr->kind > 3) {
    throw error(errc::invalid_argument, path_, op,
                "pointer is not an object constructed by construct<T>() in this heap");
  }
  return hdr;
}

void object_directory::destroy_ptr(const void* p, const type_identity& type, destroy_fn dtor) {
  if (alloc_.read_only()) throw error(errc::read_only, path_, "destroy_ptr", "the heap is open read-only");
  world_lock::shared world(alloc_.world());
  auto* hdr = const_cast<object_header*>(header_of(p, "destroy_ptr"));
  {
    std::lock_guard lk(mutex_);
    check_type(hdr, type, "destroy_ptr");
    const auto kind = static_cast<instance_kind>(hdr->kind);
    const std::uint64_t obj = static_cast<std::uint64_t>(static_cast<const std::byte*>(p) - alloc_.base());
    if (kind == instance_kind::anonymous_kind) {
      const std::uint64_t i = lookup_anonymous(obj);
      if (i != none) {
        erase_slot(i);
      } else if (h_.num_anonymous_unlisted > 0) {
        --h_.num_anonymous_unlisted;  // built under heap format 1
      } else {
        throw error(errc::invalid_argument, path_, "destroy_ptr", "anonymous object is not in the directory");
      }
      --h_.num_anonymous;
    } else {
      const std::uint64_t i = lookup(kind, name_of(hdr), hash_of(kind, name_of(hdr)));
      if (i == none || table()[i].obj != obj) {
        throw error(errc::invalid_argument, path_, "destroy_ptr",
                    "object '" + std::string(name_of(hdr)) + "' is not in the directory");
      }
      erase_slot(i);
      if (kind == instance_kind::named_kind) --h_.num_named;
      else --h_.num_unique;
    }
  }
  dtor(hdr + 1, hdr->length);
  free_object(hdr);
}

object_info object_directory::make_info(const object_header* hdr) const {
  object_info info{};
  info.kind = static_cast<instance_kind>(hdr->kind);
  info.name = name_of(hdr);
  info.length = hdr->length;
  info.type_name = type_of(hdr);
  info.type_size = hdr->type_size;
  info.type_align = hdr->type_align;
  if (hdr->desc_off != 0) info.description = {reinterpret_cast<const char*>(at(hdr->desc_off)), hdr->desc_len};
  info.value = const_cast<object_header*>(hdr) + 1;
  info.offset = static_cast<std::uint64_t>(reinterpret_cast<const std::byte*>(hdr + 1) - alloc_.base());
  return info;
}

object_info object_directory::info(const void* p) const {
  std::lock_guard lk(mutex_);
  return make_info(header_of(p, "instance query"));
}

void object_directory::set_description(const void* p, std::string_view text) {
  if (alloc_.read_only()) {
    throw error(errc::read_only, path_, "set_instance_description", "the heap is open read-only");
  }
  if (text.size() > 0xFFFFFFFFull) throw error(errc::invalid_argument, path_, "set_instance_description", "description too long");
  world_lock::shared world(alloc_.world());
  auto* hdr = const_cast<object_header*>(header_of(p, "set_instance_description"));
  std::uint64_t fresh = 0;
  if (!text.empty()) {
    fresh = alloc_.allocate(text.size());
    if (fresh == 0) throw std::bad_alloc();
    std::memcpy(at(fresh), text.data(), text.size());
  }
  std::uint64_t old;
  {
    std::lock_guard lk(mutex_);
    old = hdr->desc_off;
    hdr->desc_off = fresh;
    hdr->desc_len = static_cast<std::uint32_t>(text.size());
  }
  if (old != 0) alloc_.deallocate(old);
}

std::uint64_t object_directory::next_entry(instance_kind kind, std::uint64_t i) const noexcept {
  const std::uint64_t cap = h_.table_cap;
  const slot* t = cap ? table() : nullptr;
  for (; i < cap; ++i) {
    if (t[i].hash < 2) continue;
    const auto* hdr = reinterpret_cast<const object_header*>(at(t[i].obj) - sizeof(object_header));
    if (hdr->kind == static_cast<std::uint8_t>(kind)) return i;
  }
  return cap;
}

object_info object_directory::entry_info(std::uint64_t i) const {
  return make_info(reinterpret_cast<const object_header*>(at(table()[i].obj) - sizeof(object_header)));
}

std::optional<object_info> object_directory::find_info(instance_kind kind, std::string_view name) const {
  if (kind == instance_kind::anonymous_kind) return std::nullopt;
  const std::uint64_t h = hash_of(kind, name);
  std::lock_guard lk(mutex_);
  const std::uint64_t i = lookup(kind, name, h);
  if (i == none) return std::nullopt;
  return entry_info(i);
}

std::uint64_t object_directory::count(instance_kind kind) const noexcept {
  std::lock_guard lk(mutex_);
  switch (kind) {
    case instance_kind::named_kind: return h_.num_named;
    case instance_kind::unique_kind: return h_.num_unique;
    case instance_kind::anonymous_kind: return h_.num_anonymous;
  }
  return 0;
}

void object_directory::check(std::vector<std::string>& problems) const {
  const std::uint64_t cap = h_.table_cap;
  if (cap == 0) {
    if (h_.table_off != 0 || h_.table_live != 0 || h_.table_tomb != 0) {
      problems.push_back("directory: empty table with nonzero offset/counters");
    }
    if (h_.num_named != 0 || h_.num_unique != 0 || h_.num_anonymous != unlisted_anonymous()) {
      problems.push_back("directory: objects counted but no table");
    }
    return;
  }
  if (!std::has_single_bit(cap)) {
    problems.push_back("directory: table capacity " + std::to_string(cap) + " not a power of two");
    return;
  }
  if (!alloc_.is_live_range(h_.table_off, cap * sizeof(slot))) {
    problems.push_back("directory: table does not lie in a live allocation");
    return;
  }
  const slot* t = table();
  std::uint64_t live = 0, tomb = 0, named = 0, unique = 0, anonymous = 0;
  for (std::uint64_t i = 0; i < cap; ++i) {
    if (t[i].hash == empty_hash) continue;
    if (t[i].hash == tomb_hash) {
      ++tomb;
      continue;
    }
    ++live;
    const std::uint64_t obj = t[i].obj;
    const std::string where = "directory slot " + std::to_string(i) + ": ";
    if (obj < sizeof(object_header) || !alloc_.is_live_range(obj - sizeof(object_header), sizeof(object_header))) {
      problems.push_back(where + "object header not in a live allocation");
      continue;
    }
    const auto* hdr = reinterpret_cast<const object_header*>(at(obj) - sizeof(object_header));
    if (hdr->magic != object_header::magic_value) {
      problems.push_back(where + "bad object header magic");
      continue;
    }
    if (hdr->kind == static_cast<std::uint8_t>(instance_kind::named_kind)) ++named;
    else if (hdr->kind == static_cast<std::uint8_t>(instance_kind::unique_kind)) ++unique;
    else if (hdr->kind == static_cast<std::uint8_t>(instance_kind::anonymous_kind)) ++anonymous;
    else {
      problems.push_back(where + "indexed object of kind " + std::to_string(hdr->kind));
      continue;
    }
    if (hdr->prefix < sizeof(object_header) + hdr->name_len + hdr->type_len || obj < hdr->prefix) {
      problems.push_back(where + "object header prefix inconsistent");
      continue;
    }
    const std::uint64_t bytes = hdr->length * hdr->type_size;
    if (!alloc_.is_live_range(obj - hdr->prefix, hdr->prefix + bytes)) {
      problems.push_back(where + "object '" + std::string(name_of(hdr)) + "' extends past its allocation");
      continue;
    }
    const auto kind = static_cast<instance_kind>(hdr->kind);
    if (kind == instance_kind::anonymous_kind) {
      if (hdr->name_len != 0 || anonymous_hash(obj) != t[i].hash) {
        problems.push_back(where + "anonymous object with a name or a stored hash not of its offset");
      } else if (lookup_anonymous(obj) != i) {
        problems.push_back(where + "anonymous object unreachable or duplicated");
      }
    } else if (hash_of(kind, name_of(hdr)) != t[i].hash) {
      problems.push_back(where + "stored hash does not match name '" + std::string(name_of(hdr)) + "'");
    } else if (lookup(kind, name_of(hdr), t[i].hash) != i) {
      problems.push_back(where + "name '" + std::string(name_of(hdr)) + "' unreachable or duplicated");
    }
    if (hdr->desc_off != 0 && !alloc_.is_live_range(hdr->desc_off, hdr->desc_len)) {
      problems.push_back(where + "description not in a live allocation");
    }
  }
  if (live != h_.table_live || tomb != h_.table_tomb) {
    problems.push_back("directory: header counts " + std::to_string(h_.table_live) + " live / " +
                       std::to_string(h_.table_tomb) + " tombstones, table has " +
                       std::to_string(live) + " / " + std::to_string(tomb));
  }
  if (named != h_.num_named || unique != h_.num_unique ||
      anonymous + unlisted_anonymous() != h_.num_anonymous) {
    problems.push_back("directory: header counts " + std::to_string(h_.num_named) + " named / " +
                       std::to_string(h_.num_unique) + " unique / " + std::to_string(h_.num_anonymous) +
                       " anonymous (" + std::to_string(unlisted_anonymous()) + " unlisted), table has " +
                       std::to_string(named) + " / " + std::to_string(unique) + " / " +
                       std::to_string(anonymous));
  }
}

}  // namespace pheap::heap
