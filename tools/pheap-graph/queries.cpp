// pheap-graph stats, bfs, cc and export, in one process and across the ranks under mpirun
// (tools/pheap-graph/commands.hpp).
#include "commands.hpp"

#include <pheap/fault_guard.hpp>
#include <pheap/graph/algorithms.hpp>
#include <pheap/graph/edge_io.hpp>
#include <pheap/graph/store.hpp>
#include <pheap/mpi/manifest.hpp>
#ifdef PHEAP_GRAPH_MPI
#include <pheap/graph/mpi/algorithms.hpp>
#include <pheap/graph/mpi/partition.hpp>
#include <pheap/mpi/datastore.hpp>
#endif

#include <signal.h>

#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "output.hpp"
#include "support/progress.hpp"

namespace pheap_graph {

#ifdef PHEAP_GRAPH_MPI
namespace pgm = pheap::graph::mpi;
#endif
using tool_support::progress;

namespace {

// Calls f(graph, source) with graph `a.name` of the datastore, read-only: an ordinary one, or
// (without mpirun) every rank of a distributed one through pheap::graph::mpi::distributed_graph.
template <class F>
decltype(auto) with_graph(const query_args& a, F&& f) {
  pheap::options o = pg::datastore_options();
  if (a.buffer_size) o.pager.buffer_size = static_cast<std::size_t>(a.buffer_size);
  tool_support::apply_huge_pages(a.huge_pages, o.pager);
  if (is_distributed(a.datastore)) {
#ifdef PHEAP_GRAPH_MPI
    auto view = pheap::mpi::open_read_only(a.datastore, o);
    for (auto& m : view.ranks) m.prefetch_all();  // as below, for each rank's heap
    const graph_source src{std::filesystem::absolute(a.datastore).lexically_normal().string(), view.man.epoch,
                           ingestion_json(view.ranks, a.name), view.ranks.size()};
    return pgm::visit_distributed(view.ranks, a.name, [&](const auto& g) -> decltype(auto) { return f(g, src); });
#else
    no_mpi_built_in(a.datastore);
#endif
  }
  pheap::manager m(pheap::open_read_only, a.datastore, o);
  // Every query walks the whole graph: read the heap ahead of it in large requests, as far as
  // the buffer holds it (the walk's faults, and their read-ahead, read the rest).
  m.prefetch_all();
  graph_source src{m.path(), m.epoch(), ingestion_json(pg::find_ingest_state(m, a.name)), 0, {}};
  // A heap larger than the buffer: the walk's faults would each wait alone for a read (or for
  // the kernel's readahead of the segment files, which a walk in frontier order defeats); a
  // BFS asks for its frontier's lists ahead of the walk instead.
  const pheap::manager_stats st = m.stats();
  if (pg::walk_read_ahead_wanted(st.store.live_bytes, st.pager.buffer_bytes)) {
    src.hints = {[&m](std::span<const std::pair<const void*, std::size_t>> r) { m.prefetch(r); }};
  }
  return pg::visit_graph(m, a.name, [&](const auto& g) -> decltype(auto) { return f(g, src); });
}

}  // namespace

int cmd_stats(const query_args& a) {
  print_stats_or_json(with_graph(a, [&](const auto& g, const graph_source& src) {
    using G = std::remove_cvref_t<decltype(g)>;
    const pg::graph_profile p = pg::profile(g);
    return stats_json(p.counts, p.degrees, g.directed(), G::kind, g.num_banks(), src, a);
  }), a);
  return 0;
}

namespace {

// The loop of `stats --follow` over one reader: `line()` computes and prints the stats of the
// watermark it reads; `newest()` the datastore's newest watermark (std::nullopt: it is gone);
// `move()` moves the reader there and returns the watermark it reads then. SIGINT and SIGTERM
// (blocked by the caller before any manager started its threads) end it with exit 0.
template <class Line, class Newest, class Move>
int follow_loop(const query_args& a, const sigset_t& stop_signals, std::uint64_t shown, Line line, Newest newest,
                Move move) {
  const timespec poll{0, 200'000'000};  // a look at the superblock or manifest every 200 ms
  std::uint64_t lines = 0;
  for (;;) {
    // A watermark the writer released meanwhile (its copies passed the pin limit) is
    // errc::stale from the main guard: exit 1 naming the datastore.
    line();
    if (a.follow_count != 0 && ++lines >= a.follow_count) return 0;
    for (;;) {
      if (::sigtimedwait(&stop_signals, nullptr, &poll) > 0) return 0;
      const std::optional<std::uint64_t> n = newest();
      if (!n) {
        std::fprintf(stderr, "pheap-graph stats: %s is gone: stopped following\n", a.datastore.c_str());
        return 0;
      }
      if (*n > shown) {
        const std::uint64_t now = move();
        if (now != shown) {
          shown = now;
          break;
        }
      }
    }
  }
}

// errc::not_found / not_a_datastore from a look at a datastore being followed: it is gone.
template <class F>
std::optional<std::uint64_t> unless_gone(F&& f) {
  try {
    return f();
  } catch (const pheap::error& e) {
    if (e.code() != pheap::errc::not_found && e.code() != pheap::errc::not_a_datastore) throw;
    return std::nullopt;
  }
}

}  // namespace

int cmd_stats_follow(const query_args& a) {
  // SIGINT and SIGTERM end the command cleanly (exit 0): blocked here, before the manager starts
  // its threads (which inherit the mask, so no pager thread is interrupted by them), and taken
  // by sigtimedwait while the loop waits for the next watermark; one that comes while a line
  // is computed stays pending until then.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  pheap::options o = pg::datastore_options();
  if (a.buffer_size) o.pager.buffer_size = static_cast<std::size_t>(a.buffer_size);
  tool_support::apply_huge_pages(a.huge_pages, o.pager);
  const auto stats_of = [&](const auto& g, const graph_source& src) {
    using G = std::remove_cvref_t<decltype(g)>;
    const pg::graph_profile p = pg::profile(g);
    return stats_json(p.counts, p.degrees, g.directed(), G::kind, g.num_banks(), src, a);
  };
  if (is_distributed(a.datastore)) {
#ifdef PHEAP_GRAPH_MPI
    // Every rank read at one global watermark; a newer manifest moves them all (src/mpi/FORMAT.md
    // "Readers beside a running job", "Refresh").
    auto view = pheap::mpi::open_read_only(a.datastore, o);
    const std::string path = std::filesystem::absolute(a.datastore).lexically_normal().string();
    return follow_loop(
        a, stop_signals, view.man.epoch,
        [&] {
          for (auto& m : view.ranks) m.prefetch_all();
          const graph_source src{path, view.man.epoch, ingestion_json(view.ranks, a.name), view.ranks.size()};
          print_follow_line(pgm::visit_distributed(view.ranks, a.name, [&](const auto& g) { return stats_of(g, src); }), a);
        },
        [&] { return unless_gone([&] { return pheap::mpi::read_manifest(a.datastore, o.engine).epoch; }); },
        [&] { return pheap::mpi::refresh(view); });
#else
    no_mpi_built_in(a.datastore);
#endif
  }
  pheap::manager m(pheap::open_read_only, a.datastore, o);
  if (m.stats().store.pin_limit == 0) {
    // Read under the datastore's shared flock (store format 3): no writer can open meanwhile,
    // so no watermark would ever come.
    throw usage_error("stats --follow reads beside a writer, which store format 3 does not allow: convert " +
                      a.datastore + " with `pheap upgrade " + a.datastore + "` first");
  }
  return follow_loop(
      a, stop_signals, m.epoch(),
      [&] {
        m.prefetch_all();
        const graph_source src{m.path(), m.epoch(), ingestion_json(pg::find_ingest_state(m, a.name)), 0, {}};
        print_follow_line(pg::visit_graph(m, a.name, [&](const auto& g) { return stats_of(g, src); }), a);
      },
      [&] { return unless_gone([&] { return pheap::manager::peek(a.datastore).epoch; }); },
      [&] { return m.refresh(); });
}

int cmd_bfs(const query_args& a) {
  return with_graph(a, [&](const auto& g, const graph_source& src) {
    if (!g.contains(a.source)) {
      throw usage_error("source " + std::to_string(a.source) + " is not a vertex of the graph");
    }
    const auto r = pg::bfs(g, a.source, src.hints);
    std::vector<std::uint64_t> per_level(r.max_level + 1, 0);
    for (auto l : r.level)
      if (l != pg::kUnreached) ++per_level[l];
    return print_bfs({r.reached, r.index.ids.size(), r.max_level, per_level, [&](std::FILE* f) {
                        for (std::size_t i = 0; i < r.index.ids.size(); ++i)
                          if (r.level[i] != pg::kUnreached)
                            std::fprintf(f, "%" PRIu64 " %" PRIu64 " %" PRIu64 "\n", r.index.ids[i], r.level[i], r.parent[i]);
                      }},
                     src, a);
  });
}

int cmd_cc(const query_args& a) {
  return with_graph(a, [&](const auto& g, const graph_source& src) {
    const auto r = pg::connected_components(g);
    return print_cc({g.directed(), r.components, r.largest, r.index.ids.size(), [&](std::FILE* f) {
                       for (std::size_t i = 0; i < r.index.ids.size(); ++i)
                         std::fprintf(f, "%" PRIu64 " %" PRIu64 "\n", r.index.ids[i], r.component[i]);
                     }},
                    src, a);
  });
}

// Writes every edge once, vertices in ascending id order, neighbours in stored order:
// all arcs of a directed graph; arcs with src <= dst of an undirected graph. Ingesting the
// output with the same flags rebuilds an equal graph.
int cmd_export(const query_args& a) {
  const auto fmt = pg::parse_input_format(a.format);
  const std::string out = a.output.empty() ? "-" : a.output;
  std::uint64_t n = 0;
  with_graph(a, [&](const auto& g, const graph_source&) {
    using G = std::remove_cvref_t<decltype(g)>;
    pg::edge_writer w(out, fmt, G::kind);
    progress pr(progress::choose(a.quiet), "export", progress::unit::items, "vertices");
    pr.set_total(g.num_vertices());
    std::uint64_t done = 0;
    pg::for_each_vertex_by_id(g, [&](std::uint64_t u, const auto& lst) {
      for (const auto& nb : lst) {
        const std::uint64_t v = G::dst_of(nb);
        if (!g.directed() && v < u) continue;
        w.write(pg::edge{u, v, G::weight_bits_of(nb)});
        ++n;
      }
      if ((++done & 0xfff) == 0) pr.update(done);
    });
    w.close();
    pr.update(done);
    pr.finish();
  });
  std::fprintf(stderr, "exported %" PRIu64 " edges\n", n);
  return 0;
}

#ifdef PHEAP_GRAPH_MPI
// ---- queries under mpirun (a distributed datastore, the same N) -----------------------------

namespace {

// The ingestion records of every rank reduced on every rank: rank 0's, with the edges summed.
json reduced_ingestion_json(pheap::manager& m, const std::string& name) {
  json j = ingestion_json(pg::find_ingest_state(m, name));
  std::uint64_t mine[3] = {0, 0, 0}, sum[3] = {0, 0, 0};
  if (!j.is_null()) {
    mine[0] = j["total_edges"].get<std::uint64_t>();
    mine[1] = j["unfinished"].is_null() ? 0 : j["unfinished"]["edges"].get<std::uint64_t>();
  }
  MPI_Allreduce(mine, sum, 2, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (j.is_null()) return j;
  j["total_edges"] = sum[0];
  if (!j["unfinished"].is_null()) j["unfinished"]["edges"] = sum[1];
  return j;
}

// Every rank opens its own datastore read-only at the global watermark and calls
// f(its graph, source) (collective); a failure is reported by rank 0, the others leave with
// the same status silently.
template <class F>
int with_rank_graph(const query_args& a, F&& f) {
  try {
    pheap::options o = pg::datastore_options();
    if (a.buffer_size) o.pager.buffer_size = static_cast<std::size_t>(a.buffer_size);
    tool_support::apply_huge_pages(a.huge_pages, o.pager);
    pheap::mpi::datastore ds(pheap::open_read_only, MPI_COMM_WORLD, a.datastore, o);
    pgm::check_partition(ds.local(), a.name, ds.size(), ds.rank());
    const graph_source src{std::filesystem::absolute(a.datastore).lexically_normal().string(), ds.epoch(),
                           reduced_ingestion_json(ds.local(), a.name), static_cast<std::uint64_t>(ds.size())};
    pg::visit_graph(ds.local(), a.name, [&](const auto& g) { f(g, src); });
    return 0;
  } catch (const std::exception& e) {
    if (g_mpi->rank != 0) leave_after_reporter(describe(e).code);
    throw;
  }
}

}  // namespace

int cmd_stats_mpi(const query_args& a) {
  return with_rank_graph(a, [&](const auto& g, const graph_source& src) {
    using G = std::remove_cvref_t<decltype(g)>;
    const pg::graph_counts c = pgm::count(MPI_COMM_WORLD, g);
    const auto hist = pgm::degree_distribution(MPI_COMM_WORLD, g);
    if (g_mpi->rank == 0) print_stats_or_json(stats_json(c, hist, g.directed(), G::kind, g.num_banks(), src, a), a);
  });
}

int cmd_bfs_mpi(const query_args& a) {
  return with_rank_graph(a, [&](const auto& g, const graph_source& src) {
    const auto s = pgm::bfs(MPI_COMM_WORLD, g, a.source, !a.output.empty());
    if (g_mpi->rank != 0) return;
    print_bfs({s.reached, s.vertices, s.max_level, s.per_level, [&](std::FILE* f) {
                 for (const auto& [v, l, p] : s.rows) std::fprintf(f, "%" PRIu64 " %" PRIu64 " %" PRIu64 "\n", v, l, p);
               }},
              src, a);
  });
}

int cmd_cc_mpi(const query_args& a) {
  return with_rank_graph(a, [&](const auto& g, const graph_source& src) {
    const auto s = pgm::connected_components(MPI_COMM_WORLD, g, !a.output.empty());
    if (g_mpi->rank != 0) return;
    print_cc({g.directed(), s.components, s.largest, s.vertices, [&](std::FILE* f) {
                for (const auto& [v, c] : s.rows) std::fprintf(f, "%" PRIu64 " %" PRIu64 "\n", v, c);
              }},
             src, a);
  });
}

// Rank 0 writes every rank's edges in the single-process export's order.
int cmd_export_mpi(const query_args& a) {
  std::uint64_t n = 0;
  with_rank_graph(a, [&](const auto& g, const graph_source&) {
    using G = std::remove_cvref_t<decltype(g)>;
    std::optional<pg::edge_writer> w;
    if (g_mpi->rank == 0) w.emplace(a.output.empty() ? "-" : a.output, pg::parse_input_format(a.format), G::kind);
    n = pgm::gather_edges(MPI_COMM_WORLD, g, [&](const pg::edge& e) { w->write(e); });
    if (w) w->close();
  });
  if (g_mpi->rank == 0) std::fprintf(stderr, "exported %" PRIu64 " edges\n", n);
  return 0;
}
#endif

}  // namespace pheap_graph
