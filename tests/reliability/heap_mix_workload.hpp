// The mixed heap workload of the heap kill campaign (tests/reliability/heap_kill_test.cpp,
// victim: rel_heap_child). Step s (s = 1, 2, ...) is a list of operations drawn from
// (seed, s) and the state before it: a vector growing and shrinking, a map of strings
// (small and up to 64 KiB values) with inserts/overwrites/erases, and named char arrays
// ("blob-N", 16 B .. 512 KiB) created and destroyed. The state after step s is therefore a
// pure function of (seed, s): the DRAM `model` replays it, and digest() summarises it. The
// heap side applies the same operations and stores s in the named object "step", so the
// step a reopened heap holds is part of the atomically committed state.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "pheap/container.hpp"
#include "pheap/pheap.hpp"

namespace pheap::test::mix {

inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// 64-bit FNV-1a over bytes, then mixed.
struct hasher {
  std::uint64_t h = 0xcbf29ce484222325ull;
  void bytes(const void* p, std::size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ull;
  }
  void u64(std::uint64_t v) { h = mix64(h ^ v); }
};

// Deterministic content of a map value or a blob.
inline void fill(char* out, std::size_t len, std::uint64_t tag) {
  std::uint64_t x = mix64(tag);
  for (std::size_t i = 0; i < len; ++i) {
    if (i % 8 == 0) x = mix64(x + i);
    out[i] = static_cast<char>(x >> (8 * (i % 8)));
  }
}
inline std::uint64_t content_hash(const char* p, std::size_t len) {
  hasher h;
  h.bytes(p, len);
  return h.h;
}
inline std::string blob_name(std::uint64_t id) { return "blob-" + std::to_string(id); }

enum class op_kind { vec_push, vec_pop, vec_reset, map_put, map_erase, blob_create, blob_destroy };
struct op {
  op_kind kind;
  std::uint64_t a = 0, b = 0, c = 0;  // push: count, first value; pop: count; put: key, len,
                                      // tag; erase: key; create: id, len; destroy: id
};

struct blob_info {
  std::uint64_t len = 0, hash = 0;
};

// The DRAM reference.
struct model {
  std::uint64_t step = 0;
  std::vector<std::uint64_t> vec;
  std::map<std::uint64_t, std::string> map;
  std::map<std::string, blob_info> blobs;  // by name (the heap is compared in name order)
  std::uint64_t next_blob = 0, blob_bytes = 0;

  static constexpr std::uint64_t kVecCap = 60000;        // elements
  static constexpr std::uint64_t kBlobBytesCap = 3u << 20;
  static constexpr std::uint64_t kMapKeys = 400;

  void apply(const op& o) {
    switch (o.kind) {
      case op_kind::vec_push:
        for (std::uint64_t i = 0; i < o.a; ++i) vec.push_back(mix64(o.b + i));
        break;
      case op_kind::vec_pop:
        for (std::uint64_t i = 0; i < o.a && !vec.empty(); ++i) vec.pop_back();
        break;
      case op_kind::vec_reset:
        vec.clear();
        break;
      case op_kind::map_put: {
        std::string v(o.b, '\0');
        fill(v.data(), v.size(), o.c);
        map[o.a] = std::move(v);
        break;
      }
      case op_kind::map_erase:
        map.erase(o.a);
        break;
      case op_kind::blob_create: {
        std::string v(o.b, '\0');
        fill(v.data(), v.size(), o.a);
        blobs[blob_name(o.a)] = {o.b, content_hash(v.data(), v.size())};
        blob_bytes += o.b;
        next_blob = o.a + 1;
        break;
      }
      case op_kind::blob_destroy: {
        const auto it = blobs.find(blob_name(o.a));
        blob_bytes -= it->second.len;
        blobs.erase(it);
        break;
      }
    }
  }

  // The operations of step `s` (this->step must be s - 1); applies them to this model.
  std::vector<op> next_step(std::uint64_t seed) {
    const std::uint64_t s = step + 1;
    std::mt19937_64 rng(mix64(seed ^ mix64(s)));
    std::vector<op> ops;
    const int n = 4 + static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) {
      op o{op_kind::vec_push};
      const unsigned r = static_cast<unsigned>(rng() % 100);
      if (r < 22) {
        o = {vec.size() > kVecCap ? op_kind::vec_reset : op_kind::vec_push, 1 + rng() % 3000, rng()};
      } else if (r < 34) {
        o = {op_kind::vec_pop, 1 + rng() % 4000};
      } else if (r < 62) {
        const std::uint64_t key = rng() % kMapKeys;
        const std::uint64_t len = rng() % 10 == 0 ? 8192 + rng() % 57344 : rng() % 200;
        o = {op_kind::map_put, key, len, rng()};
      } else if (r < 72) {
        if (map.empty()) continue;
        auto it = map.begin();
        std::advance(it, static_cast<long>(rng() % map.size()));
        o = {op_kind::map_erase, it->first};
      } else if (r < 88 && blob_bytes < kBlobBytesCap) {
        const std::uint64_t len = rng() % 8 == 0 ? 65536 + rng() % (448u << 10) : 16 + rng() % 4096;
        o = {op_kind::blob_create, next_blob, len};
      } else {
        if (blobs.empty()) continue;
        auto it = blobs.begin();
        std::advance(it, static_cast<long>(rng() % blobs.size()));
        o = {op_kind::blob_destroy, std::stoull(it->first.substr(5))};
      }
      apply(o);
      ops.push_back(o);
    }
    step = s;
    return ops;
  }

  std::uint64_t digest() const {
    hasher h;
    h.u64(step);
    h.u64(vec.size());
    h.bytes(vec.data(), vec.size() * sizeof(std::uint64_t));
    h.u64(map.size());
    for (const auto& [k, v] : map) {
      h.u64(k);
      h.u64(v.size());
      h.u64(content_hash(v.data(), v.size()));
    }
    h.u64(blobs.size());
    for (const auto& [name, b] : blobs) {
      h.bytes(name.data(), name.size());
      h.u64(b.len);
      h.u64(b.hash);
    }
    return h.h;
  }
};

// ---- the heap side -------------------------------------------------------------------------

using pvec = container::vector<std::uint64_t>;
using pstring = container::string;
using pmap = container::map<std::uint64_t, pstring, std::less<std::uint64_t>,
                            container::scoped_allocator<std::pair<const std::uint64_t, pstring>>>;

struct heap_objects {
  std::uint64_t* step = nullptr;
  pvec* vec = nullptr;
  pmap* map = nullptr;
};

// The objects of a heap written by this workload; all null when the heap is empty (created,
// workload not yet initialised).
inline heap_objects find_objects(const manager& m) {
  return {m.find<std::uint64_t>("step").first, m.find<pvec>("vec").first, m.find<pmap>("map").first};
}

// Initialises an empty heap (step 0). The caller flushes.
inline heap_objects init_objects(manager& m) {
  heap_objects h;
  h.vec = m.construct<pvec>("vec")(m.get_allocator<>());
  h.map = m.construct<pmap>("map")(m.get_allocator<>());
  h.step = m.construct<std::uint64_t>("step")(0);
  return h;
}

inline void apply(manager& m, heap_objects& h, const op& o) {
  switch (o.kind) {
    case op_kind::vec_push:
      for (std::uint64_t i = 0; i < o.a; ++i) h.vec->push_back(mix64(o.b + i));
      break;
    case op_kind::vec_pop:
      for (std::uint64_t i = 0; i < o.a && !h.vec->empty(); ++i) h.vec->pop_back();
      break;
    case op_kind::vec_reset:
      h.vec->clear();
      h.vec->shrink_to_fit();
      break;
    case op_kind::map_put: {
      std::string v(o.b, '\0');
      fill(v.data(), v.size(), o.c);
      (*h.map)[o.a].assign(v.data(), v.size());
      break;
    }
    case op_kind::map_erase:
      h.map->erase(o.a);
      break;
    case op_kind::blob_create: {
      char* p = m.construct<char>(blob_name(o.a))[o.b]('\0');
      if (p == nullptr) throw std::runtime_error("construct " + blob_name(o.a) + " failed");
      fill(p, o.b, o.a);
      break;
    }
    case op_kind::blob_destroy:
      if (!m.destroy<char>(blob_name(o.a))) throw std::runtime_error("destroy " + blob_name(o.a));
      break;
  }
}

// Digest of what the heap holds, computed like model::digest() from the actual bytes; "" in
// `problem` when the heap is shaped as expected.
inline std::uint64_t heap_digest(const manager& m, std::string& problem) {
  const heap_objects h = find_objects(m);
  if (h.step == nullptr || h.vec == nullptr || h.map == nullptr) {
    problem = "workload objects missing";
    return 0;
  }
  hasher d;
  d.u64(*h.step);
  d.u64(h.vec->size());
  if (!h.vec->empty()) d.bytes(&(*h.vec)[0], h.vec->size() * sizeof(std::uint64_t));
  d.u64(h.map->size());
  for (const auto& [k, v] : *h.map) {
    d.u64(k);
    d.u64(v.size());
    d.u64(content_hash(v.data(), v.size()));
  }
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> blobs;
  for (auto it = m.named_begin(); it != m.named_end(); ++it) {
    const object_info i = *it;
    const std::string name(i.name);
    if (name.rfind("blob-", 0) != 0) {
      if (name != "step" && name != "vec" && name != "map") problem = "unexpected object " + name;
      continue;
    }
    blobs[name] = {i.length, content_hash(static_cast<const char*>(i.value), i.length)};
  }
  d.u64(blobs.size());
  for (const auto& [name, b] : blobs) {
    d.bytes(name.data(), name.size());
    d.u64(b.first);
    d.u64(b.second);
  }
  return d.h;
}

// Datastore geometry: 4 KiB pages, 1 MiB segments, a 512 KiB buffer for the victim (the
// working set is several MiB, so the pager evicts all the time).
inline options heap_options(std::size_t buffer) {
  options o;
  o.capacity = 128ull << 20;
  o.page_size = 4096;
  o.segment_size = 1ull << 20;
  o.chunk_size = 256ull << 10;
  o.pager.buffer_size = buffer;
  return o;
}

// The huge-page geometry (rel_heap_child --huge): 2 MiB pages and segments of 8 of them, each
// fill one PMD mapping (huge_pages = always). The same workload spans about as many pages of
// 2 MiB as of 4 KiB (the allocator's chunks are 256 KiB), so a buffer of a few pages still
// evicts all the time.
inline void use_huge_pages(options& o) {
  o.page_size = 2ull << 20;
  o.segment_size = 16ull << 20;
  o.pager.huge_pages = huge_pages_mode::always;
  o.pager.buffer_size = std::max<std::size_t>(o.pager.buffer_size, 4 * o.page_size);
}

}  // namespace pheap::test::mix
