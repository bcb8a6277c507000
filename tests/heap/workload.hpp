// A deterministic container-of-containers workload shared by the reopen and crash tests:
// step i appends to an adjacency list and sometimes to a string map, so the heap state after
// n steps is a pure function of n and can be rebuilt in DRAM as a reference.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "pheap/pheap.hpp"

namespace pheap::test {

using adj_vec = container::vector<std::uint64_t>;
using adj_map = container::unordered_map<std::uint64_t, adj_vec, boost::hash<std::uint64_t>,
                                         std::equal_to<std::uint64_t>,
                                         container::scoped_allocator<std::pair<const std::uint64_t, adj_vec>>>;
using pstring = container::string;
using str_map = container::map<pstring, pstring, std::less<pstring>,
                               container::scoped_allocator<std::pair<const pstring, pstring>>>;

struct dram_state {
  std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> adj;
  std::map<std::string, std::string> strs;
};

inline std::string key_of(std::uint64_t i) { return "key-" + std::to_string(i); }
inline std::string value_of(std::uint64_t i) {
  return std::string(i % 50, static_cast<char>('a' + i % 26)) + "/" + std::to_string(i * 7);
}

struct heap_state {
  adj_map* adj;
  str_map* strs;
  std::uint64_t* steps;
};

inline heap_state open_state(manager& m) {
  auto al = m.get_allocator<>();
  return {m.find_or_construct<adj_map>("adj")(al), m.find_or_construct<str_map>("strs")(al),
          m.find_or_construct<std::uint64_t>("steps")(std::uint64_t{0})};
}

// Applies step i (1-based) to the heap.
inline void apply_step(manager& m, const heap_state& s, std::uint64_t i) {
  (*s.adj)[i % 97].push_back(i * 3);
  if (i % 10 == 0) {
    auto al = m.get_allocator<>();
    s.strs->insert_or_assign(pstring(key_of(i).c_str(), al), pstring(value_of(i).c_str(), al));
  }
  *s.steps = i;
}

inline dram_state reference(std::uint64_t n) {
  dram_state d;
  for (std::uint64_t i = 1; i <= n; ++i) {
    d.adj[i % 97].push_back(i * 3);
    if (i % 10 == 0) d.strs[key_of(i)] = value_of(i);
  }
  return d;
}

// Empty string when equal, else the first difference.
inline std::string compare(const heap_state& s, const dram_state& d) {
  if (s.adj->size() != d.adj.size()) return "adjacency key count differs";
  for (const auto& [k, v] : d.adj) {
    auto it = s.adj->find(k);
    if (it == s.adj->end()) return "missing key " + std::to_string(k);
    if (it->second.size() != v.size()) return "length of key " + std::to_string(k) + " differs";
    for (std::size_t j = 0; j < v.size(); ++j) {
      if (it->second[j] != v[j]) return "value differs at key " + std::to_string(k);
    }
  }
  if (s.strs->size() != d.strs.size()) return "string map size differs";
  auto it = s.strs->begin();
  for (const auto& [k, v] : d.strs) {
    if (std::string(it->first.c_str()) != k || std::string(it->second.c_str()) != v) return "string entry " + k + " differs";
    ++it;
  }
  return {};
}

}  // namespace pheap::test
