// A CSR graph (two arrays) for any allocator, as Metall's graph examples write them: the
// arrays are held by the allocator's pointer type (offset_ptr for a heap allocator) and read
// through metall::to_raw_pointer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include <metall/offset_ptr.hpp>

template <class Index = std::uint64_t, class Vertex = std::uint64_t, class Alloc = std::allocator<char>>
class csr_graph {
  using index_alloc = typename std::allocator_traits<Alloc>::template rebind_alloc<Index>;
  using vertex_alloc = typename std::allocator_traits<Alloc>::template rebind_alloc<Vertex>;

 public:
  csr_graph(std::size_t vertices, std::size_t edges, const Alloc& alloc = Alloc())
      : vertices_(vertices), edges_(edges), alloc_(alloc) {
    index_alloc ia(alloc_);
    vertex_alloc va(alloc_);
    offsets_ = ia.allocate(vertices_ + 1);
    targets_ = va.allocate(edges_);
    for (std::size_t i = 0; i <= vertices_; ++i) offsets()[i] = 0;
  }
  ~csr_graph() {
    index_alloc(alloc_).deallocate(offsets_, vertices_ + 1);
    vertex_alloc(alloc_).deallocate(targets_, edges_);
  }
  csr_graph(const csr_graph&) = delete;
  csr_graph& operator=(const csr_graph&) = delete;

  Index* offsets() { return metall::to_raw_pointer(offsets_); }
  Vertex* targets() { return metall::to_raw_pointer(targets_); }

 private:
  std::size_t vertices_, edges_;
  typename std::allocator_traits<index_alloc>::pointer offsets_;
  typename std::allocator_traits<vertex_alloc>::pointer targets_;
  Alloc alloc_;
};
