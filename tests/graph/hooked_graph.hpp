// A test double for grouped insertion (pheap/graph/grouped_insert.hpp "Graph requirements"):
// an adjacency_list seen through a hook called before every add_arcs, on the inserting thread,
// and one called before every look-up (neighbors: the look-ahead's, on its own thread). A hook
// that throws simulates a crash inside a batch; one that blocks holds the insertion at a known
// place; one that reads a damaged heap page meets it on the hook's thread.
#pragma once

#include <pheap/graph/adjacency_list.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

namespace pheap::graph::test {

template <class Inner>
struct hooked_graph {
  using neighbor_type = typename Inner::neighbor_type;
  static constexpr weight_kind kind = Inner::kind;

  Inner* g;
  std::function<void(std::uint64_t vertex, std::size_t arcs)> before_add;
  std::function<void(std::uint64_t vertex)> before_lookup = {};

  static neighbor_type make_neighbor(std::uint64_t v, std::uint64_t weight_bits) noexcept {
    return Inner::make_neighbor(v, weight_bits);
  }
  bool directed() const noexcept { return g->directed(); }
  std::size_t num_banks() const noexcept { return g->num_banks(); }
  std::size_t bank_of(std::uint64_t u) const noexcept { return g->bank_of(u); }
  const auto* neighbors(std::uint64_t u) const {
    if (before_lookup) before_lookup(u);
    return g->neighbors(u);
  }
  void add_arcs(std::uint64_t u, std::span<const neighbor_type> arcs, bank_locks* locks) {
    if (before_add) before_add(u, arcs.size());
    g->add_arcs(u, arcs, locks);
  }
};

}  // namespace pheap::graph::test
