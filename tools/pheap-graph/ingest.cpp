// pheap-graph generate and ingest (tools/pheap-graph/commands.hpp).
#include "commands.hpp"

#include <pheap/fault_guard.hpp>
#include <pheap/graph/degree_index.hpp>
#include <pheap/graph/edge_io.hpp>
#include <pheap/graph/ingest.hpp>
#include <pheap/graph/store.hpp>
#ifdef PHEAP_GRAPH_MPI
#include <pheap/graph/mpi/ingest.hpp>
#endif

#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "support/progress.hpp"

namespace pheap_graph {

#ifdef PHEAP_GRAPH_MPI
namespace pgm = pheap::graph::mpi;
#endif
using tool_support::progress;

int cmd_generate(const generate_args& a) {
  pg::rmat_params p = a.p;
  p.weights = pg::parse_weight_kind(a.weights);
  pg::rmat_generator gen(p);
  pg::edge_writer out(a.output, pg::parse_input_format(a.format), p.weights);
  progress pr(progress::choose(a.quiet), "generate", progress::unit::items, "edges");
  pr.set_total(gen.num_edges());
  std::vector<pg::edge> buf(std::size_t{1} << 20);
  for (std::uint64_t i = 0; i < gen.num_edges(); i += buf.size()) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), gen.num_edges() - i));
    gen.generate(i, n, buf.data(), a.threads);
    out.write(buf.data(), n);
    pr.update(i + n);
  }
  out.close();
  pr.finish();
  std::fprintf(stderr, "generated %" PRIu64 " edges (scale %u, edge factor %" PRIu64 ", seed %" PRIu64 ")\n",
               gen.num_edges(), p.scale, p.edge_factor, p.seed);
  return 0;
}

namespace {

// "--flush-every": a COUNT of edges (powers of 1000), a duration ("30s", "5m", "1h", "0.5s"),
// or 0 / never (a watermark only at the end).
void parse_flush_every(const std::string& s, pg::ingest_options& o) {
  o.flush_every_edges = 0;
  o.flush_every_seconds = 0;
  if (s == "0" || s == "never") return;
  const char unit = s.empty() ? '\0' : s.back();
  if (unit == 's' || unit == 'm' || unit == 'h') {
    double v = 0;
    const std::string num = s.substr(0, s.size() - 1);
    const auto r = std::from_chars(num.data(), num.data() + num.size(), v);
    if (num.empty() || r.ec != std::errc() || r.ptr != num.data() + num.size() || !(v > 0)) {
      throw usage_error("--flush-every: bad duration '" + s + "' (expected e.g. 30s, 5m, 1h, 0.5s)");
    }
    o.flush_every_seconds = v * (unit == 's' ? 1 : unit == 'm' ? 60 : 3600);
    return;
  }
  try {
    o.flush_every_edges = tool_support::parse_count("--flush-every", s);
  } catch (const CLI::ValidationError&) {
    throw usage_error("--flush-every: bad value '" + s +
                      "' (expected a COUNT of edges such as 1M, a duration such as 30s, or never)");
  }
}

// Every input exists and is not a directory ("-" is stdin): checked before anything is
// created, so a typo leaves no empty datastore behind.
void check_inputs(const std::vector<std::string>& inputs) {
  for (const auto& in : inputs) {
    if (in == "-") continue;
    struct stat st {};
    if (::stat(in.c_str(), &st) != 0) {
      throw usage_error("cannot read input " + in + ": " + std::strerror(errno));
    }
    if (S_ISDIR(st.st_mode)) throw usage_error("input " + in + " is a directory");
  }
}

// A graph datastore's options (pheap::graph::datastore_options: 4 KiB pages, fills on the
// faulting thread) with the command line's.
// The pager leaves the ingestion's own memory (its batches) free when it sizes a buffer from
// the memory limit, unless PHEAP_MEMORY_HEADROOM says otherwise: at large pages the buffer
// fills before the first batch is parsed (pheap/graph/ingest.hpp, ingest_memory).
pheap::options manager_options(const ingest_args& a, const pg::ingest_options& o) {
  pheap::options mo = pg::datastore_options();
  if (a.capacity) mo.capacity = a.capacity;
  if (a.page_size) mo.page_size = static_cast<std::uint32_t>(a.page_size);
  if (a.buffer_size) mo.pager.buffer_size = static_cast<std::size_t>(a.buffer_size);
  if (mo.pager.memory_headroom == 0) {
    mo.pager.memory_headroom = static_cast<std::size_t>(pg::ingest_memory(a.inputs, o));
  }
  tool_support::apply_huge_pages(a.huge_pages, mo.pager);
  return mo;
}

// Progress in input bytes: the total when every input's size is known (plain files, sized zstd
// frames), and the position a resumed job starts from (returned).
std::uint64_t prepare_progress(progress& pr, const ingest_args& a, const pg::persistent_ingest_state& st) {
  std::vector<std::uint64_t> sizes;
  bool known = true;
  for (const auto& in : a.inputs) {
    const auto s = pg::decoded_size(in);
    known = known && s.has_value();
    sizes.push_back(s.value_or(0));
  }
  std::uint64_t total = 0;
  for (auto s : sizes) total += s;
  if (known) pr.set_total(total);
  std::uint64_t start = 0;
  if (st.active && !a.abandon && st.input_index < sizes.size()) {
    start = st.byte_offset;
    for (std::size_t i = 0; i < st.input_index; ++i) start += sizes[i];
  }
  pr.set_start(start);
  return start;
}

// A resume from a watermark without the checksum of the consumed input (stderr).
void warn_if_unverified(const pg::ingest_report& r) {
  if (!r.resume_unverified) return;
  std::fprintf(stderr,
               "pheap-graph ingest: warning: the watermark resumed from holds no checksum of the input "
               "read before it (written by an older pheap-graph): resumed trusting the input's path "
               "and size; later watermarks hold one\n");
}

// The job's report: stdout for the result, stderr (through pr) for progress. `epoch`: the
// watermark the datastore ends at (closing writes nothing more when nothing is dirty).
void print_report(const pg::ingest_report& r, const std::string& name, std::uint64_t vertices,
                  std::uint64_t arcs, std::uint64_t epoch) {
  if (r.already_done) {
    std::printf("nothing to do: these inputs were already ingested into '%s' (use --reingest to add them "
                "again); the datastore stays at watermark %" PRIu64 "\n",
                name.c_str(), epoch);
    return;
  }
  const auto& f = r.final;
  std::printf("ingested %" PRIu64 " edges (%" PRIu64 " this run%s) from %zu input(s) in %.2f s: %s edges/s, %.1f MiB read, "
              "%" PRIu64 " bad lines skipped, watermark %" PRIu64 ", graph has %" PRIu64 " vertices and %" PRIu64 " arcs\n",
              f.edges, f.edges_this_run,
              r.resumed ? (", resumed at edge " + std::to_string(r.resumed_at_edges)).c_str() : "",
              f.inputs, f.seconds,
              tool_support::human_count(f.seconds > 0 ? static_cast<double>(f.edges_this_run) / f.seconds : 0).c_str(),
              static_cast<double>(f.bytes_this_run) / (1 << 20), f.bad_lines, epoch, vertices, arcs);
}

// What readers beside the job cost it through the datastore (pheap::store_stats): nothing
// printed when none read an older watermark while it wrote.
void print_reader_cost(const pheap::store_stats& s) {
  if (s.reader_protect_ns == 0) return;
  std::printf("readers beside this job: %.2f s keeping their watermarks (%" PRIu64 " copies of pages and map blocks, %.1f MiB)\n",
              static_cast<double>(s.reader_protect_ns) / 1e9, s.pins_made,
              static_cast<double>(s.pin_bytes_written) / (1 << 20));
}

template <class G>
int ingest_into(G& g, pheap::manager& m, const ingest_args& a, pg::ingest_options o) {
  pg::persistent_ingest_state& st = *pg::find_ingest_state(m, a.name);
  std::uint64_t window = a.prefetch_window;
  if (window == kAutoWindow) {
    window = pg::grouped_insert_options::default_window;
    const std::uint64_t buffer = m.stats().pager.buffer_bytes;  // 0: the kernel's mmap backend
    if (buffer != 0) window = std::min(window, buffer / 8);
  }
  if (window != 0) {  // the look-ahead asks the pager (or the kernel) for the lists
    o.prefetch = [&m](std::span<const std::pair<const void*, std::size_t>> r) { m.prefetch(r); };
    o.prefetch_window_bytes = static_cast<std::size_t>(window);
  }
  progress pr(progress::choose(a.quiet), "ingest", progress::unit::bytes);
  const std::uint64_t start = prepare_progress(pr, a, st);
  auto report = [&](const pg::ingest_progress& p) {
    pr.update(start + p.bytes_this_run,
              "input " + std::to_string(p.input_index + 1) + "/" + std::to_string(p.inputs) + ", " +
                  tool_support::human_count(static_cast<double>(p.edges)) + " edges, " +
                  (p.watermark ? "watermark " + std::to_string(p.watermark) : "no watermark yet"));
  };
  // The watermark that ends the job also holds the graph's degree index (degree_index.hpp).
  o.on_finish = [&] { pg::refresh_degree_index(m, a.name, g); };
  pg::input_check& check = *pg::find_input_check(m, a.name);  // open_or_create_graph made it
  pg::ingest_report r;
  try {
    r = pheap::guard_faults([&] { return pg::ingest(g, st, check, a.inputs, o, [&] { return m.flush(); }, report); });
  } catch (const pg::input_error& e) {
    pr.break_line();
    std::fprintf(stderr, "pheap-graph ingest: %s\n", e.what());
    std::fprintf(stderr,
                 "pheap-graph ingest: %" PRIu64 " edges of this job are committed (watermark %" PRIu64 "); %s\n",
                 st.edges, m.epoch(),
                 e.skippable() ? "fix the input or rerun with --skip-bad-lines to continue at that line"
                               : "the input is damaged or not an edge list there (--skip-bad-lines "
                                 "cannot get past it): repair or replace it and rerun");
    tool_support::leave(exit_bad_input);
  } catch (const pg::ingest_usage_error& e) {
    pr.break_line();
    std::fprintf(stderr, "pheap-graph ingest: %s\n", e.what());
    tool_support::leave(exit_usage);
  } catch (const std::exception& e) {
    // A batch may be half inserted: the manager's destructor must not commit it. Leave without
    // destructors; the datastore stays at its last watermark (exactly-once holds).
    pr.break_line();
    std::fprintf(stderr, "pheap-graph ingest: %s\npheap-graph ingest: stopped; the datastore keeps its last watermark %" PRIu64 "\n",
                 e.what(), m.epoch());
    tool_support::leave(exit_failure);
  }
  pr.finish();
  warn_if_unverified(r);
  print_report(r, a.name, g.num_vertices(), g.num_arcs(), m.epoch());
  print_reader_cost(m.stats().store);
  return 0;
}

#ifdef PHEAP_GRAPH_MPI
// mpirun -np N pheap-graph ingest: every rank runs this (graph/mpi/FORMAT.md). Rank 0 prints
// progress and the report; a failure is printed by the lowest failing rank, and every rank
// leaves with its exit status (so does mpirun).
int ingest_distributed(const ingest_args& a, const pg::ingest_options& o, const pgm::graph_spec& spec,
                       const pheap::options& mo) {
  const bool talk = g_mpi->rank == 0;
  const std::string who = g_mpi->size > 1 ? "pheap-graph ingest (rank " + std::to_string(g_mpi->rank) + "): "
                                          : "pheap-graph ingest: ";
  auto fail = [&](int code, const std::string& what, const char* after = "") {
    std::fprintf(stderr, "%s%s%s\n", who.c_str(), what.c_str(), after);
    tool_support::leave(code);
  };
  try {
    pheap::mpi::datastore ds = pgm::open_or_create(MPI_COMM_WORLD, a.datastore, a.name, spec, mo);
    progress pr(progress::choose(a.quiet || !talk), "ingest", progress::unit::bytes);
    auto report = [&](const pg::ingest_progress& p) {
      pr.update(p.bytes_this_run, std::to_string(g_mpi->size) + " ranks, " +
                                      tool_support::human_count(static_cast<double>(p.edges)) + " edges, " +
                                      (p.watermark ? "watermark " + std::to_string(p.watermark) : "no watermark yet"));
    };
    const pgm::distributed_report r = pheap::guard_faults(
        [&] { return pgm::ingest(MPI_COMM_WORLD, ds, a.name, spec, a.inputs, o, report); });
    pr.finish();
    std::uint64_t mine[2] = {0, 0}, sum[2] = {0, 0};
    pg::visit_graph(ds.local(), a.name, [&](const auto& g) { mine[0] = g.num_vertices(), mine[1] = g.num_arcs(); });
    MPI_Allreduce(mine, sum, 2, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (talk) {
      warn_if_unverified(r.job);
      print_report(r.job, a.name, sum[0], sum[1], ds.epoch());
      if (!r.job.already_done) {
        const auto edges = r.job.final.edges_this_run;
        std::printf("ranks %" PRIu64 ": %" PRIu64 " batches, %" PRIu64 " records (%s) sent between ranks, %.1f bytes per edge\n",
                    r.ranks, r.batches, r.records_exchanged, tool_support::human_bytes(r.bytes_exchanged).c_str(),
                    edges ? static_cast<double>(r.bytes_exchanged) / static_cast<double>(edges) : 0.0);
      }
    }
    return 0;
  } catch (const pgm::rank_failed& e) {
    leave_after_reporter(e.kind() == pgm::rank_failed::usage ? exit_usage
                        : e.kind() == pgm::rank_failed::input ? exit_bad_input : exit_failure);
  } catch (const pg::input_error& e) {
    fail(exit_bad_input, e.what(), "; the edges before it are committed on every rank: fix the input or rerun "
                                   "with --skip-bad-lines to continue at that line");
  } catch (const pg::ingest_usage_error& e) {
    fail(exit_usage, e.what());
  } catch (const pheap::error& e) {
    // The graph differs from the options (agreed), or a datastore failure: a batch may be half
    // inserted, so leave without destructors; the datastore keeps its last global watermark.
    if (e.code() == pheap::errc::invalid_argument) {  // agreed: every rank has it
      if (talk) fail(exit_usage, e.what());
      leave_after_reporter(exit_usage);
    }
    fail(exit_failure, e.what(), "; stopped: the datastore keeps its last global watermark");
  } catch (const std::exception& e) {
    fail(exit_failure, e.what(), "; stopped: the datastore keeps its last global watermark");
  }
  return exit_failure;
}
#endif

}  // namespace

int cmd_ingest(const ingest_args& a) {
  pg::ingest_options o;
  o.format = pg::parse_input_format(a.format);
  o.threads = a.threads;
  o.batch_size = static_cast<std::size_t>(a.batch_size);
  if (o.batch_size == 0) throw usage_error("--batch-size must be >= 1");
  parse_flush_every(a.flush_every, o);
  o.skip_bad_lines = a.skip_bad_lines;
  o.reingest = a.reingest;
  o.abandon_incomplete = a.abandon;
  const bool directed = !a.undirected;
  const pg::weight_kind wk = a.weighted.empty() ? pg::weight_kind::none : pg::parse_weight_kind(a.weighted);
  if (a.banks == 0) throw usage_error("--banks must be >= 1");
  check_inputs(a.inputs);

  const pheap::options mo = manager_options(a, o);
  const bool distributed = is_distributed(a.datastore);
#ifdef PHEAP_GRAPH_MPI
  if (g_mpi->active && (g_mpi->size > 1 || distributed || !std::filesystem::exists(a.datastore))) {
    return ingest_distributed(a, o, pgm::graph_spec{directed, wk, static_cast<std::size_t>(a.banks)}, mo);
  }
#endif
  if (distributed) {
#ifndef PHEAP_GRAPH_MPI
    no_mpi_built_in(a.datastore);
#endif
    throw usage_error(a.datastore + " is a distributed datastore: ingest into it under mpirun with the rank "
                      "count it was created with (pheap-graph stats shows it)");
  }
  if (!std::filesystem::exists(a.datastore)) {
    pg::create_datastore(a.datastore, mo, a.name, directed, wk, static_cast<std::size_t>(a.banks));
  }
  pheap::manager m(pheap::open_only, a.datastore, mo);
  try {
    switch (wk) {
      case pg::weight_kind::none:
        return ingest_into(pg::open_or_create_graph<void>(m, a.name, directed, a.banks), m, a, o);
      case pg::weight_kind::u64:
        return ingest_into(pg::open_or_create_graph<std::uint64_t>(m, a.name, directed, a.banks), m, a, o);
      case pg::weight_kind::f32:
        return ingest_into(pg::open_or_create_graph<float>(m, a.name, directed, a.banks), m, a, o);
    }
  } catch (const pheap::error& e) {
    if (e.code() != pheap::errc::invalid_argument) throw;
    throw usage_error(e.what());  // the graph differs from the options
  }
  return exit_failure;
}

}  // namespace pheap_graph
