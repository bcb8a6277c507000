// pheap/graph/rmat.hpp — R-MAT / Graph500-style edge generator.
//
// Contract: edge i is a pure function of (parameters, i). Output is therefore identical for a
// given seed whatever the number of threads or the order in which ranges are generated, and a
// range [first, first+count) can be produced without generating what precedes it.
//
// Model: vertex ids have `scale` bits. For each bit level, from the most significant down, the
// edge falls into quadrant (0,0) with probability a, (0,1) with b, (1,0) with c and (1,1) with
// d = 1 - a - b - c, where the first coordinate is a source bit and the second a destination bit
// (Chakrabarti et al.; Graph500 uses a=0.57 b=0.19 c=0.19). Edge count = edge_factor * 2^scale.
// With `scramble`, ids are passed through a seed-dependent bijection of [0, 2^scale) so that
// high-degree vertices are not clustered at small ids (Graph500 permutes vertex labels).
// Weights (optional): u64 uniform in [1, 2^20]; f32 uniform in [0, 1) with 24-bit resolution.
#pragma once

#include <pheap/graph/types.hpp>

#include <cstddef>
#include <cstdint>

namespace pheap::graph {

struct rmat_params {
  unsigned scale = 20;            // 1..62
  std::uint64_t edge_factor = 16; // > 0; edges = edge_factor << scale (must fit in uint64)
  double a = 0.57, b = 0.19, c = 0.19;  // each >= 0, a + b + c <= 1
  std::uint64_t seed = 123;
  bool scramble = false;
  weight_kind weights = weight_kind::none;
};

class rmat_generator {
 public:
  // Throws pheap::error(invalid_argument) naming the bad parameter.
  explicit rmat_generator(const rmat_params& p);

  const rmat_params& params() const noexcept { return p_; }
  std::uint64_t num_edges() const noexcept { return edges_; }
  std::uint64_t num_vertex_ids() const noexcept { return std::uint64_t{1} << p_.scale; }

  // Edge number i (any i; i >= num_edges() just continues the sequence).
  edge operator()(std::uint64_t i) const noexcept;

  // out[k] = (*this)(first + k) for k < count, computed with up to `threads` threads (0 = 1).
  void generate(std::uint64_t first, std::size_t count, edge* out, unsigned threads = 1) const;

  // The id bijection used by scramble (identity when scramble is off). Exposed for tests.
  std::uint64_t permute(std::uint64_t id) const noexcept;

 private:
  rmat_params p_;
  std::uint64_t edges_;
  std::uint64_t mask_;
  std::uint64_t scramble_key_;
  // Quadrant thresholds on a 2^53 integer scale: r < ta -> (0,0), < tab -> (0,1), < tabc -> (1,0).
  std::uint64_t ta_, tab_, tabc_;
};

}  // namespace pheap::graph
