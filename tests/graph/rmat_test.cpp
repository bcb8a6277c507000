// R-MAT generator: determinism, independence from threading, parameter checks, distribution.
#include <pheap/graph/rmat.hpp>

#include "common/test_util.hpp"

#include <gtest/gtest.h>

#include <set>
#include <vector>

using namespace pheap::graph;

namespace {
std::vector<edge> gen(const rmat_params& p, unsigned threads = 1) {
  rmat_generator g(p);
  std::vector<edge> out(g.num_edges());
  g.generate(0, out.size(), out.data(), threads);
  return out;
}
}  // namespace

TEST(GraphRmat, SameSeedGivesIdenticalEdgesAcrossGenerators) {
  rmat_params p;
  p.scale = 12;
  p.edge_factor = 8;
  p.seed = 42;
  EXPECT_EQ(gen(p), gen(p));
  // Pinned values: a change of the generator changes every datastore test's input.
  rmat_generator g(p);
  EXPECT_EQ(g.num_edges(), 8u << 12);
  const edge e0 = g(0);
  EXPECT_LT(e0.src, 1u << 12);
  EXPECT_LT(e0.dst, 1u << 12);
}

TEST(GraphRmat, DifferentSeedsGiveDifferentEdges) {
  rmat_params p;
  p.scale = 10;
  p.edge_factor = 4;
  auto a = gen(p);
  p.seed = 124;
  auto b = gen(p);
  std::size_t same = 0;
  for (std::size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
  EXPECT_LT(same, a.size() / 4);
}

TEST(GraphRmat, ThreadCountAndRangeSplitDoNotChangeOutput) {
  rmat_params p;
  p.scale = 14;
  p.edge_factor = 4;
  p.scramble = true;
  p.weights = weight_kind::f32;
  const auto one = gen(p, 1);
  EXPECT_EQ(gen(p, 2), one);
  EXPECT_EQ(gen(p, 7), one);
  rmat_generator g(p);
  std::vector<edge> tail(1000);
  g.generate(5000, tail.size(), tail.data(), 3);
  for (std::size_t i = 0; i < tail.size(); ++i) ASSERT_EQ(tail[i], one[5000 + i]) << i;
}

TEST(GraphRmat, ScrambleIsABijectionOfTheIdSpace) {
  for (unsigned scale : {1u, 5u, 10u, 16u}) {
    rmat_params p;
    p.scale = scale;
    p.scramble = true;
    rmat_generator g(p);
    std::set<std::uint64_t> seen;
    for (std::uint64_t x = 0; x < (1u << scale); ++x) {
      const std::uint64_t y = g.permute(x);
      ASSERT_LT(y, 1u << scale);
      seen.insert(y);
    }
    EXPECT_EQ(seen.size(), 1u << scale) << "scale " << scale;
  }
  rmat_params p;
  p.scale = 10;
  p.scramble = true;
  EXPECT_NE(rmat_generator(p).permute(0), 0u) << "scramble should move id 0 for the default seed";
}

TEST(GraphRmat, QuadrantFrequenciesFollowABC) {
  rmat_params p;
  p.scale = 1;  // one level: the edge is exactly one quadrant draw
  p.edge_factor = 200000;
  p.a = 0.5;
  p.b = 0.2;
  p.c = 0.2;
  const auto es = gen(p);
  double q[4] = {0, 0, 0, 0};
  for (const edge& e : es) q[e.src * 2 + e.dst] += 1.0 / static_cast<double>(es.size());
  EXPECT_NEAR(q[0], 0.5, 0.01);
  EXPECT_NEAR(q[1], 0.2, 0.01);
  EXPECT_NEAR(q[2], 0.2, 0.01);
  EXPECT_NEAR(q[3], 0.1, 0.01);
}

TEST(GraphRmat, WeightsAreInTheDocumentedRanges) {
  rmat_params p;
  p.scale = 10;
  p.edge_factor = 8;
  p.weights = weight_kind::u64;
  for (const edge& e : gen(p)) {
    ASSERT_GE(e.weight, 1u);
    ASSERT_LE(e.weight, 1u << 20);
  }
  p.weights = weight_kind::f32;
  for (const edge& e : gen(p)) {
    const float w = f32_from_bits(e.weight);
    ASSERT_GE(w, 0.0f);
    ASSERT_LT(w, 1.0f);
  }
  p.weights = weight_kind::none;
  for (const edge& e : gen(p)) ASSERT_EQ(e.weight, 0u);
}

TEST(GraphRmat, RejectsInvalidParameters) {
  auto bad = [](auto mutate) {
    rmat_params p;
    mutate(p);
    EXPECT_EQ(pheap::test::code_of([&] { rmat_generator{p}; }), pheap::errc::invalid_argument);
  };
  bad([](rmat_params& p) { p.scale = 0; });
  bad([](rmat_params& p) { p.scale = 63; });
  bad([](rmat_params& p) { p.edge_factor = 0; });
  bad([](rmat_params& p) { p.scale = 60; p.edge_factor = 16; });  // 2^64 edges
  bad([](rmat_params& p) { p.a = -0.1; });
  bad([](rmat_params& p) { p.a = 0.6; p.b = 0.3; p.c = 0.2; });
}
