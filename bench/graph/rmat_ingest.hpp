// bench/graph/rmat_ingest.hpp — the insertion loop both graph benchmarks time
// (construct_bench, ingest_bench): the R-MAT stream (default a, b, c; scrambled; seed 123)
// generated batch by batch, untimed, and inserted, timed, in one of two ways:
//   per edge (default; Metall's workload): each batch split over `threads` threads, edge by
//     edge in input order with bank locks. With a `prefetch` callback (pheap:
//     manager::prefetch), each batch's adjacency lists are looked up and asked for before it
//     is inserted (pheap::graph::prefetch_ranges), timed with the insertion.
//   grouped: pheap::graph::grouped_inserter, as graph::ingest inserts (grouped by source
//     vertex, the threads on disjoint banks; the grouping's sorts are timed). With a `prefetch`
//     callback, its look-ahead thread asks for the lists of the banks ahead of the inserting
//     threads, at most `prefetch_window` bytes ahead.
#pragma once

#include <pheap/graph/adjacency_list.hpp>
#include <pheap/graph/grouped_insert.hpp>
#include <pheap/graph/ingest.hpp>
#include <pheap/graph/rmat.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <utility>
#include <thread>
#include <vector>

namespace pheap::bench {

struct rmat_stream {
  unsigned scale = 18;
  std::uint64_t edge_factor = 16;
  unsigned threads = 2;                      // generating and inserting threads
  std::size_t batch = std::size_t{1} << 20;  // edges per batch
  // Empty: no prefetch.
  graph::prefetch_fn prefetch;
  bool grouped = false;
  std::size_t prefetch_window = graph::grouped_insert_options::default_window;  // grouped only
};

// Inserts the whole stream into `g` and returns the summed insert time in seconds. For a run
// that may not finish: `arcs` (may be null) advances, per edge, by 2 * 8192 (two arcs per edge:
// an estimate, self-loops count once) every 8192 edges a thread inserts, grouped by the arcs of
// each bank once inserted; `after_batch` (may be empty) is called with the edges inserted and
// the insert seconds so far after each batch.
template <class G>
double ingest_rmat(G& g, const rmat_stream& s, std::atomic<std::uint64_t>* arcs = nullptr,
                   const std::function<void(std::uint64_t, double)>& after_batch = {}) {
  using clk = std::chrono::steady_clock;
  graph::rmat_params p;
  p.scale = s.scale;
  p.edge_factor = s.edge_factor;
  p.scramble = true;
  p.seed = 123;
  graph::rmat_generator gen(p);
  std::vector<graph::edge> batch(s.batch);
  graph::bank_locks locks(g.num_banks());
  graph::grouped_inserter grouped;
  graph::grouped_insert_options go;
  go.threads = s.threads;
  go.prefetch = s.prefetch;
  go.prefetch_window_bytes = s.prefetch_window;
  go.arcs_inserted = arcs;
  // Batch [0, n), edge by edge over the threads.
  auto per_edge = [&](std::size_t n) {
    if (s.prefetch) {
      const auto ranges = graph::prefetch_ranges(g, std::span<const graph::edge>(batch.data(), n));
      s.prefetch(ranges);
    }
    auto part = [&](std::size_t lo, std::size_t hi) {
      for (std::size_t i = lo; i < hi; ++i) {
        g.insert(batch[i], &locks);
        if (arcs != nullptr && (i - lo) % 8192 == 8191) arcs->fetch_add(2 * 8192, std::memory_order_relaxed);
      }
    };
    if (s.threads == 1) {
      part(0, n);
    } else {
      std::vector<std::thread> ts;
      for (unsigned t = 0; t < s.threads; ++t) {
        ts.emplace_back([&, t] { part(n * t / s.threads, n * (t + 1) / s.threads); });
      }
      for (auto& th : ts) th.join();
    }
  };
  double total = 0;
  for (std::uint64_t first = 0; first < gen.num_edges(); first += s.batch) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(s.batch, gen.num_edges() - first));
    gen.generate(first, n, batch.data(), s.threads);
    const auto t0 = clk::now();
    if (s.grouped) {
      grouped.insert(g, std::span<const graph::edge>(batch.data(), n), go);
    } else {
      per_edge(n);
    }
    total += std::chrono::duration<double>(clk::now() - t0).count();
    if (after_batch) after_batch(first + n, total);
  }
  return total;
}

}  // namespace pheap::bench
