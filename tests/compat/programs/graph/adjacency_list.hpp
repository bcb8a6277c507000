// An adjacency list for any allocator, as Metall's graph examples write them: an unordered_map
// of vectors with a scoped allocator adaptor so the vectors share the map's allocator.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include <boost/container/scoped_allocator.hpp>
#include <boost/container/vector.hpp>
#include <boost/unordered_map.hpp>

template <class Vertex = std::uint64_t, class Alloc = std::allocator<char>>
class adjacency_list {
  template <class U>
  using rebound = typename std::allocator_traits<Alloc>::template rebind_alloc<U>;
  using neighbours = boost::container::vector<Vertex, rebound<Vertex>>;
  using table = boost::unordered_map<Vertex, neighbours, std::hash<Vertex>, std::equal_to<Vertex>,
                                     boost::container::scoped_allocator_adaptor<rebound<std::pair<const Vertex, neighbours>>>>;

 public:
  explicit adjacency_list(const Alloc& alloc = Alloc()) : table_(alloc) {}
  void add_edge(Vertex from, Vertex to) { table_[from].push_back(to); }
  auto edges_begin(Vertex v) { return table_[v].begin(); }
  auto edges_end(Vertex v) { return table_[v].end(); }

 private:
  table table_;
};
