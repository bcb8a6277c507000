// pheap-graph — generate, ingest and query persistent graphs. `pheap-graph --help` and
// `pheap-graph COMMAND --help` list every option; tools/README.md documents the --json schemas.
//
//   generate  R-MAT edge list (Graph500 parameters) to a file or stdout
//   ingest    edge lists (text or binary, plain, gzip or zstd) into a graph of a datastore;
//             exactly-once and resumable: a watermark every --flush-every (default 30 s), and
//             rerunning the same command after a crash continues from the last one
//   stats     counts and degree distribution;  bfs, cc: traversals;  export: the edges back
//
// Exit status (the same table as the pheap tool: tools/support/cli.hpp): 0 success; 1 failure
// (I/O, a damaged datastore page, a full disk: the message names the file and the cause); 2
// usage error (a bad option or value, a missing input, a job or graph mismatch, an input
// changed since its watermark); 3 malformed input (the edges before the bad line are
// committed; fix the input or rerun with --skip-bad-lines to resume at that line).
//
// Reads of the heap run inside pheap::guard_faults, so a damaged page is exit 1 naming the
// segment file and the page instead of SIGBUS — for ingest on its main thread and on the
// look-ahead thread of --prefetch-window (all of it with the default --threads 1; inserting
// threads started by --threads N > 1 are not guarded).
// Query commands open the datastore read-only.
//
// Distributed datastores (graph/mpi/FORMAT.md, tools/README.md): built with MPI, the tool
// initialises MPI only when mpirun launched it; then `ingest` runs on every rank
// (pheap/graph/mpi/ingest.hpp) and the queries run across the ranks
// (pheap/graph/mpi/algorithms.hpp), rank 0 printing. Without mpirun the queries read a
// distributed datastore in one process (pheap/graph/mpi/partition.hpp, distributed_graph).
#include <pheap/fault_guard.hpp>
#include <pheap/graph/algorithms.hpp>
#include <pheap/graph/edge_io.hpp>
#include <pheap/graph/ingest.hpp>
#include <pheap/graph/rmat.hpp>
#include <pheap/graph/store.hpp>
#include <pheap/mpi/manifest.hpp>
#ifdef PHEAP_GRAPH_MPI
#include <pheap/graph/mpi/algorithms.hpp>
#include <pheap/graph/mpi/ingest.hpp>
#include <pheap/graph/mpi/partition.hpp>
#endif

#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <charconv>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/cli.hpp"
#include "support/progress.hpp"

namespace pg = pheap::graph;
#ifdef PHEAP_GRAPH_MPI
namespace pgm = pheap::graph::mpi;
#endif

namespace {

using nlohmann::json;
using tool_support::progress;

constexpr int exit_failure = tool_support::exit_failure;
constexpr int exit_usage = tool_support::exit_usage;
constexpr int exit_bad_input = tool_support::exit_bad_input;

// A usage problem found after parsing (exit 2).
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string dump(const json& j) { return j.dump(2, ' ', false, json::error_handler_t::replace); }

void print_json(const json& j) { std::printf("%s\n", dump(j).c_str()); }

// MPI in this process: initialised only when mpirun launched it (Open MPI and PMIx set these
// variables before main), so a plain run never touches MPI. Without MPI built in, never.
struct mpi_session {
  bool active = false;
  int rank = 0, size = 1;
#ifdef PHEAP_GRAPH_MPI
  mpi_session() {
    if (std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr && std::getenv("PMIX_RANK") == nullptr) return;
    MPI_Init(nullptr, nullptr);
    active = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  }
  ~mpi_session() {
    if (active) MPI_Finalize();
  }
#endif
};
const mpi_session* g_mpi = nullptr;  // main's

#ifdef PHEAP_GRAPH_MPI
// A rank whose failure another rank reports leaves a moment later: mpirun ends the whole job
// at the first non-zero exit, which must not cut the reporter's message.
[[noreturn]] void leave_after_reporter(int code) {
  std::this_thread::sleep_for(std::chrono::seconds(1));
  tool_support::leave(code);
}
#endif

// A distributed datastore (pheap/mpi/manifest.hpp): D/pheap.manifest and a datastore per rank.
bool is_distributed(const std::string& ds) {
  std::error_code ec;
  return std::filesystem::exists(std::filesystem::path(ds) / pheap::mpi::manifest_file, ec);
}

#ifndef PHEAP_GRAPH_MPI
[[noreturn]] void no_mpi_built_in(const std::string& ds) {
  throw usage_error(ds + " is a distributed datastore (it has " + std::string(pheap::mpi::manifest_file) +
                    "), and this pheap-graph was built without MPI: rebuild with libopenmpi-dev installed");
}
#endif


// ---- generate -----------------------------------------------------------------------------

struct generate_args {
  pg::rmat_params p;
  std::string weights = "none", format = "text", output;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  bool quiet = false;
};

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

// ---- ingest -------------------------------------------------------------------------------

// --prefetch-window not given: the library's default window, at most an eighth of the pager's
// buffer (pages read ahead and evicted before their use were read for nothing).
constexpr std::uint64_t kAutoWindow = ~std::uint64_t{0};

struct ingest_args {
  std::string datastore, name = "graph", format = "text", weighted, flush_every = "30s";
  std::vector<std::string> inputs;
  unsigned threads = 1;
  std::uint64_t batch_size = 1u << 20, banks = 1024;
  std::uint64_t capacity = 0, page_size = 0, buffer_size = 0;  // 0: the library's default
  std::uint64_t prefetch_window = kAutoWindow;  // 0: no look-ahead
  bool undirected = false, skip_bad_lines = false, reingest = false, abandon = false, quiet = false;
};

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
pheap::options manager_options(const ingest_args& a) {
  pheap::options mo = pg::datastore_options();
  if (a.capacity) mo.capacity = a.capacity;
  if (a.page_size) mo.page_size = static_cast<std::uint32_t>(a.page_size);
  if (a.buffer_size) mo.pager.buffer_size = static_cast<std::size_t>(a.buffer_size);
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

  const pheap::options mo = manager_options(a);
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

// ---- queries ------------------------------------------------------------------------------

struct query_args {
  std::string datastore, name = "graph", output, format = "text";
  std::uint64_t source = 0, buffer_size = 0;
  bool json = false, degrees = false, quiet = false;
};

// The log2 buckets of the degree distribution: {lo, hi, count}.
std::vector<std::array<std::uint64_t, 3>> log2_buckets(const std::map<std::uint64_t, std::uint64_t>& hist) {
  std::map<unsigned, std::uint64_t> buckets;
  for (const auto& [d, n] : hist) buckets[d == 0 ? 0 : 1 + static_cast<unsigned>(63 - __builtin_clzll(d))] += n;
  std::vector<std::array<std::uint64_t, 3>> v;
  for (const auto& [b, n] : buckets) {
    v.push_back({b == 0 ? 0 : (1ull << (b - 1)), b == 0 ? 0 : (1ull << b) - 1, n});
  }
  return v;
}

json ingestion_json(const pg::persistent_ingest_state* st) {
  if (st == nullptr) return nullptr;
  json j{{"jobs_completed", st->jobs_completed}, {"total_edges", st->total_edges}, {"unfinished", nullptr}};
  if (st->active) {
    j["unfinished"] = {{"input", st->input_index + 1}, {"byte_offset", st->byte_offset},
                       {"edges", st->edges}, {"inputs", st->description.c_str()}};
  }
  return j;
}

// Where a query's graph comes from: a datastore, or every rank of a distributed one.
struct graph_source {
  std::string path;
  std::uint64_t watermark = 0;  // the datastore's, or the global one
  json ingestion;               // ingestion_json; summed over the ranks when distributed
  std::uint64_t ranks = 0;      // 0: not distributed
  pg::walk_hints hints;         // set when the heap does not fit in the buffer (with_graph)
};

// Out of core, a BFS's frontier is looked up and its lists prefetched by these many threads,
// this many vertices ahead of the walk (pheap/graph/look_ahead.hpp): enough reads in flight for
// the disk, few enough pages ahead to stay well inside any buffer such a walk is meant for.
constexpr unsigned kLookAheadThreads = 4;
constexpr std::size_t kLookAheadVertices = 256;

#ifdef PHEAP_GRAPH_MPI
// The ingestion records of every rank as one: edges summed; "input" and "byte_offset" of an
// unfinished job are the lowest unfinished rank's (tools/README.md).
json ingestion_json(std::vector<pheap::manager>& ranks, const std::string& name) {
  json all = nullptr;
  for (auto& m : ranks) {
    json j = ingestion_json(pg::find_ingest_state(m, name));
    if (j.is_null()) continue;
    if (all.is_null()) {
      all = j;
      continue;
    }
    all["total_edges"] = all["total_edges"].get<std::uint64_t>() + j["total_edges"].get<std::uint64_t>();
    if (j["unfinished"].is_null()) continue;
    if (all["unfinished"].is_null()) {
      all["unfinished"] = j["unfinished"];
    } else {
      all["unfinished"]["edges"] = all["unfinished"]["edges"].get<std::uint64_t>() + j["unfinished"]["edges"].get<std::uint64_t>();
    }
  }
  return all;
}
#endif

// Calls f(graph, source) with graph `a.name` of the datastore, read-only: an ordinary one, or
// (without mpirun) every rank of a distributed one through pheap::graph::mpi::distributed_graph.
template <class F>
decltype(auto) with_graph(const query_args& a, F&& f) {
  pheap::options o = pg::datastore_options();
  if (a.buffer_size) o.pager.buffer_size = static_cast<std::size_t>(a.buffer_size);
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
  // A heap larger than the buffer, read O_DIRECT: the walk's random faults would each wait
  // alone for the disk; a BFS then has its frontier read ahead (destroyed before m: it may
  // still be touching the heap). Through the page cache the kernel's readahead of the segment
  // files already serves most of those faults, and the look-ahead's CPU costs more than it
  // saves (bench/README.md, "Cold reads").
  std::optional<pg::look_ahead> ahead;
  const pheap::manager_stats st = m.stats();
  if (!o.read_only_cache && pg::walk_look_ahead_wanted(st.store.live_bytes, st.pager.buffer_bytes)) {
    ahead.emplace(kLookAheadThreads, kLookAheadVertices);
    src.hints = {&*ahead, [&m](std::span<const std::pair<const void*, std::size_t>> r) { m.prefetch(r); }};
  }
  return pg::visit_graph(m, a.name, [&](const auto& g) -> decltype(auto) { return f(g, src); });
}

json degree_json(const std::map<std::uint64_t, std::uint64_t>& hist, const query_args& a) {
  json dist = json::array();
  if (a.degrees) {
    for (const auto& [d, n] : hist) dist.push_back({{"degree", d}, {"count", n}});
  } else {
    for (const auto& [lo, hi, n] : log2_buckets(hist)) dist.push_back({{"lo", lo}, {"hi", hi}, {"count", n}});
  }
  return dist;
}

// The counts, the degree distribution and the ingestion record, as `stats --json` prints them.
json stats_json(const pg::graph_counts& c, const std::map<std::uint64_t, std::uint64_t>& hist, bool directed,
                pg::weight_kind kind, std::size_t banks, const graph_source& src, const query_args& a) {
  json j = {{"datastore", src.path}, {"graph", a.name}, {"directed", directed},
            {"weights", pg::to_string(kind)}, {"banks", banks},
            {"watermark", src.watermark}, {"vertices", c.vertices},
            {"edges", directed ? c.arcs : (c.arcs + c.self_loops) / 2}, {"arcs", c.arcs},
            {"self_loops", c.self_loops}, {"max_degree", c.max_degree}, {"isolated", c.isolated}};
  j["degree_distribution"] = degree_json(hist, a);
  j["ingestion"] = src.ingestion;
  if (src.ranks != 0) j["ranks"] = src.ranks;
  return j;
}

// The text form; the reliability campaigns parse its "ingestion" line (tests/reliability).
void print_stats(const json& j, const query_args& a) {
  std::printf("graph       %s (%s, weights %s, %zu banks) in %s, watermark %" PRIu64 "\n", a.name.c_str(),
              j["directed"].get<bool>() ? "directed" : "undirected", j["weights"].get<std::string>().c_str(),
              j["banks"].get<std::size_t>(), j["datastore"].get<std::string>().c_str(),
              j["watermark"].get<std::uint64_t>());
  if (j.contains("ranks")) std::printf("ranks       %" PRIu64 " (a distributed datastore)\n", j["ranks"].get<std::uint64_t>());
  std::printf("vertices    %" PRIu64 "\n", j["vertices"].get<std::uint64_t>());
  std::printf("edges       %" PRIu64 "\n", j["edges"].get<std::uint64_t>());
  std::printf("arcs        %" PRIu64 " (stored adjacency entries)\n", j["arcs"].get<std::uint64_t>());
  std::printf("self-loops  %" PRIu64 "\n", j["self_loops"].get<std::uint64_t>());
  std::printf("max degree  %" PRIu64 "\n", j["max_degree"].get<std::uint64_t>());
  std::printf("isolated    %" PRIu64 " (vertices without out-arcs)\n", j["isolated"].get<std::uint64_t>());
  if (a.degrees) {
    std::printf("degree distribution (degree count):\n");
    for (const auto& e : j["degree_distribution"]) {
      std::printf("  %" PRIu64 " %" PRIu64 "\n", e["degree"].get<std::uint64_t>(), e["count"].get<std::uint64_t>());
    }
  } else {
    std::printf("degree distribution (log2 buckets [lo, hi] count):\n");
    for (const auto& e : j["degree_distribution"]) {
      std::printf("  [%" PRIu64 ", %" PRIu64 "] %" PRIu64 "\n", e["lo"].get<std::uint64_t>(),
                  e["hi"].get<std::uint64_t>(), e["count"].get<std::uint64_t>());
    }
  }
  if (const json& in = j["ingestion"]; !in.is_null()) {
    std::printf("ingestion   %" PRIu64 " job(s) completed, %" PRIu64 " edges ingested in total",
                in["jobs_completed"].get<std::uint64_t>(), in["total_edges"].get<std::uint64_t>());
    if (const json& u = in["unfinished"]; !u.is_null()) {
      std::printf("; UNFINISHED job at input %" PRIu64 " byte %" PRIu64 " (%" PRIu64 " edges): %s",
                  u["input"].get<std::uint64_t>(), u["byte_offset"].get<std::uint64_t>(),
                  u["edges"].get<std::uint64_t>(), u["inputs"].get<std::string>().c_str());
    }
    std::printf("\n");
  }
}

void print_stats_or_json(const json& j, const query_args& a) {
  if (a.json) {
    print_json(j);
  } else {
    print_stats(j, a);
  }
}

int cmd_stats(const query_args& a) {
  print_stats_or_json(with_graph(a, [&](const auto& g, const graph_source& src) {
    using G = std::remove_cvref_t<decltype(g)>;
    return stats_json(pg::count(g), pg::degree_distribution(g), g.directed(), G::kind, g.num_banks(), src, a);
  }), a);
  return 0;
}

// Writes "# header" and one line per row to `path`; throws pheap::error naming it on failure.
template <class Rows>
void write_rows(const std::string& path, const char* header, Rows&& rows) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) pheap::throw_errno(errno, path, "create output");
  std::fprintf(f, "%s\n", header);
  rows(f);
  if (std::ferror(f) != 0 || std::fclose(f) != 0) pheap::throw_errno(errno, path, "write output");
}

// What bfs prints, from one process or from every rank.
struct bfs_report {
  std::uint64_t reached = 0, vertices = 0, max_level = 0;
  std::vector<std::uint64_t> per_level;
  std::function<void(std::FILE*)> rows;  // "vertex level parent" lines for --output
};

int print_bfs(const bfs_report& r, const graph_source& src, const query_args& a) {
  if (!a.output.empty()) write_rows(a.output, "# vertex level parent", r.rows);
  if (a.json) {
    print_json({{"datastore", src.path}, {"graph", a.name}, {"source", a.source}, {"reached", r.reached},
                {"vertices", r.vertices}, {"max_level", r.max_level}, {"levels", r.per_level},
                {"output", a.output.empty() ? json(nullptr) : json(a.output)}});
    return 0;
  }
  std::printf("bfs from %" PRIu64 ": reached %" PRIu64 " of %" PRIu64 " vertices, max level %" PRIu64 "\n", a.source,
              r.reached, r.vertices, r.max_level);
  for (std::size_t l = 0; l < r.per_level.size(); ++l) std::printf("  level %zu: %" PRIu64 "\n", l, r.per_level[l]);
  return 0;
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

// What cc prints, from one process or from every rank.
struct cc_report {
  bool weakly = false;
  std::uint64_t components = 0, largest = 0, vertices = 0;
  std::function<void(std::FILE*)> rows;  // "vertex component" lines for --output
};

int print_cc(const cc_report& r, const graph_source& src, const query_args& a) {
  if (!a.output.empty()) write_rows(a.output, "# vertex component(smallest member id)", r.rows);
  if (a.json) {
    print_json({{"datastore", src.path}, {"graph", a.name}, {"weakly", r.weakly},
                {"components", r.components}, {"largest", r.largest}, {"vertices", r.vertices},
                {"output", a.output.empty() ? json(nullptr) : json(a.output)}});
    return 0;
  }
  std::printf("%sconnected components: %" PRIu64 ", largest %" PRIu64 " of %" PRIu64 " vertices\n",
              r.weakly ? "weakly " : "", r.components, r.largest, r.vertices);
  return 0;
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
    const auto ix = pg::build_index(g);
    progress pr(progress::choose(a.quiet), "export", progress::unit::items, "vertices");
    pr.set_total(ix.ids.size());
    std::uint64_t done = 0;
    for (std::uint64_t u : ix.ids) {
      for (const auto& nb : *g.neighbors(u)) {
        const std::uint64_t v = G::dst_of(nb);
        if (!g.directed() && v < u) continue;
        w.write(pg::edge{u, v, G::weight_bits_of(nb)});
        ++n;
      }
      if ((++done & 0xfff) == 0) pr.update(done);
    }
    w.close();
    pr.update(done);
    pr.finish();
  });
  std::fprintf(stderr, "exported %" PRIu64 " edges\n", n);
  return 0;
}

#ifdef PHEAP_GRAPH_MPI
// ---- queries under mpirun (a distributed datastore, the same N) -----------------------------

tool_support::failure describe(const std::exception& e);

// The ingestion records of every rank reduced on every rank: rank 0's, with the edges summed.
json ingestion_json(pheap::manager& m, const std::string& name) {
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
    pheap::mpi::datastore ds(pheap::open_read_only, MPI_COMM_WORLD, a.datastore, o);
    pgm::check_partition(ds.local(), a.name, ds.size(), ds.rank());
    const graph_source src{std::filesystem::absolute(a.datastore).lexically_normal().string(), ds.epoch(),
                           ingestion_json(ds.local(), a.name), static_cast<std::uint64_t>(ds.size())};
    pg::visit_graph(ds.local(), a.name, [&](const auto& g) { f(g, src); });
    return 0;
  } catch (const std::exception& e) {
    if (g_mpi->rank != 0) leave_after_reporter(describe(e).code);
    throw;
  }
}

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

// A query: under mpirun on a distributed datastore the MPI form runs on every rank (rank 0
// prints); under mpirun on an ordinary one, rank 0 alone runs the plain form; else the plain
// form (which reads a distributed datastore in one process).
int run_query(const query_args& a, int (*plain)(const query_args&), int (*across)(const query_args&)) {
  if (g_mpi->active && is_distributed(a.datastore) && across != nullptr) return across(a);
  if (g_mpi->active && g_mpi->rank != 0) return 0;
  return plain(a);
}
#ifdef PHEAP_GRAPH_MPI
#define PHEAP_GRAPH_ACROSS(f) f
#else
#define PHEAP_GRAPH_ACROSS(f) nullptr
#endif

// ---- the command line --------------------------------------------------------------------

// Exit 2 for usage errors, else as the pheap tool (tools/support/cli.hpp).
tool_support::failure describe(const std::exception& e) {
  if (dynamic_cast<const usage_error*>(&e) != nullptr) return {exit_usage, e.what()};
  return tool_support::describe_failure(
      e, "an ingestion may be running: `pheap info` shows its last watermark meanwhile");
}

// "--weighted" may be followed by its word ("--weighted f32") or stand alone (u64): rewritten
// as "--weighted=WORD" before CLI11 sees it, so that the input after a bare --weighted stays an
// input.
std::vector<std::string> normalise_weighted(int argc, char** argv) {
  std::vector<std::string> v(argv, argv + argc);
  for (std::size_t i = 1; i < v.size(); ++i) {
    if (v[i] != "--weighted") continue;
    const bool word = i + 1 < v.size() && (v[i + 1] == "u64" || v[i + 1] == "f32" || v[i + 1] == "none");
    v[i] = "--weighted=" + (word ? v[i + 1] : std::string("u64"));
    if (word) v.erase(v.begin() + static_cast<std::ptrdiff_t>(i) + 1);
  }
  return v;
}

void add_datastore(CLI::App& c, std::string& ds, std::string& name) {
  c.add_option("--datastore", ds, "the datastore directory")->required();
  c.add_option("--name", name, "the graph's name in the datastore (default: graph)");
}

void add_query_options(CLI::App& c, query_args& a) {
  add_datastore(c, a.datastore, a.name);
  tool_support::add_size_option(c, "--buffer-size", a.buffer_size,
                                "memory for the heap's pages (default: the pager's, PHEAP_BUFFER_SIZE)");
}

const char* const kFlushEveryHelp =
    "watermark interval: a COUNT of edges (1M = 10^6), a duration (30s, 5m, 1h) or never; "
    "default 30s. Watermarks are taken between batches, so the interval is rounded up to the "
    "first batch boundary at or after it";

// The options of every command, and what the chosen one runs.
struct command_line {
  generate_args ga;
  ingest_args ia;
  query_args qa;
  std::function<int()> action;
};

void define_generate(CLI::App& app, command_line& c) {
  generate_args& ga = c.ga;
  auto* gen = app.add_subcommand("generate", "write an R-MAT edge list (Graph500 parameters)");
  gen->add_option("--scale", ga.p.scale, "2^scale vertices")->required()->check(CLI::Range(1u, 62u));
  tool_support::add_count_option(*gen, "--edge-factor", ga.p.edge_factor, "edges per vertex (default 16)");
  gen->add_option("--a", ga.p.a, "R-MAT probability a (default 0.57)");
  gen->add_option("--b", ga.p.b, "R-MAT probability b (default 0.19)");
  gen->add_option("--c", ga.p.c, "R-MAT probability c (default 0.19)");
  gen->add_option("--seed", ga.p.seed, "random seed (default 123)");
  gen->add_flag("--scramble", ga.p.scramble, "permute vertex ids (Graph500 scrambling)");
  gen->add_option("--weights", ga.weights, "none, u64 or f32 (default none)")->check(CLI::IsMember({"none", "u64", "f32"}));
  gen->add_option("--format", ga.format, "text or binary (default text)")->check(CLI::IsMember({"text", "binary"}));
  gen->add_option("--threads", ga.threads, "generating threads (default: all cores)")->check(CLI::Range(1u, 1024u));
  gen->add_option("--output", ga.output, "file to write, - for stdout")->required();
  gen->add_flag("-q,--quiet", ga.quiet, "no progress on stderr");
  gen->callback([&c] { c.action = [&c] { return cmd_generate(c.ga); }; });
}

void define_ingest(CLI::App& app, command_line& c) {
  ingest_args& ia = c.ia;
  auto* ing = app.add_subcommand(
      "ingest", "add edge lists to a graph, exactly once; rerun the same command after a crash "
                "to resume from the last watermark");
  add_datastore(*ing, ia.datastore, ia.name);
  ing->add_option("INPUT", ia.inputs, "edge lists: text or binary, plain, gzip or zstd (found by "
                                      "their first bytes); - for stdin. A stream (stdin, a FIFO, <(zcat x.gz)) is "
                                      "read once; a rerun resumes by reading it again from its start")->required();
  ing->add_option("--format", ia.format, "text or binary (default text)")->check(CLI::IsMember({"text", "binary"}));
  ing->add_option("--weighted", ia.weighted,
                  "weights in the third column: u64 (the default when the word is left out) or "
                  "f32. Without it the graph is unweighted and a third column is read and ignored")
      ->type_name("[u64|f32]")
      ->check(CLI::IsMember({"u64", "f32"}).description(""));
  ing->add_flag("--undirected", ia.undirected, "store each edge in both directions");
  ing->add_option("--threads", ia.threads, "inserting threads (default 1)")->check(CLI::Range(1u, 1024u));
  tool_support::add_count_option(*ing, "--batch-size", ia.batch_size, "edges per batch (default 1048576)");
  ing->add_option("--flush-every", ia.flush_every, kFlushEveryHelp);
  ing->add_flag("--skip-bad-lines", ia.skip_bad_lines, "skip malformed lines (counted) instead of stopping");
  ing->add_flag("--reingest", ia.reingest, "ingest inputs again that were already ingested");
  ing->add_flag("--abandon-incomplete", ia.abandon,
                "keep what an unfinished job of other inputs committed and start this one");
  tool_support::add_count_option(*ing, "--banks", ia.banks, "adjacency banks of a new graph (default 1024)");
  tool_support::add_size_option(*ing, "--capacity", ia.capacity, "heap capacity of a new datastore (default 64GiB)");
  tool_support::add_size_option(*ing, "--page-size", ia.page_size, "page size of a new datastore (default 4KiB: faster out of core)");
  tool_support::add_size_option(*ing, "--buffer-size", ia.buffer_size,
                                "memory for the heap's pages (default: the pager's, PHEAP_BUFFER_SIZE)");
  tool_support::add_size_option(*ing, "--prefetch-window", ia.prefetch_window,
                                "read ahead the lists the next banks of a batch will grow, at most "
                                "SIZE ahead of the insertion (default 4MiB, at most 1/8 of the buffer; "
                                "0: off). Out of core it "
                                "keeps the device many reads deep; keep "
                                "it well below the buffer. Not under mpirun: ranks insert grouped, "
                                "without look-ahead");
  ing->add_flag("-q,--quiet", ia.quiet, "no progress on stderr");
  ing->callback([&c] { c.action = [&c] { return cmd_ingest(c.ia); }; });
}

// stats, bfs, cc and export: read-only queries.
void define_queries(CLI::App& app, command_line& c) {
  query_args& qa = c.qa;
  const char* json_help = "print one JSON document (schema: tools/README.md)";
  auto* stats = app.add_subcommand("stats", "vertices, edges, degrees and the ingestion record");
  add_query_options(*stats, qa);
  stats->add_flag("--degrees", qa.degrees, "the full degree distribution instead of log2 buckets");
  stats->add_flag("--json", qa.json, json_help);
  stats->callback([&c] { c.action = [&c] { return run_query(c.qa, cmd_stats, PHEAP_GRAPH_ACROSS(cmd_stats_mpi)); }; });

  auto* bfs = app.add_subcommand("bfs", "breadth-first search: vertices reached per level");
  add_query_options(*bfs, qa);
  bfs->add_option("--source", qa.source, "the vertex to start from")->required();
  bfs->add_option("--output", qa.output, "also write 'vertex level parent' lines to this file");
  bfs->add_flag("--json", qa.json, json_help);
  bfs->callback([&c] { c.action = [&c] { return run_query(c.qa, cmd_bfs, PHEAP_GRAPH_ACROSS(cmd_bfs_mpi)); }; });

  auto* cc = app.add_subcommand("cc", "(weakly) connected components");
  add_query_options(*cc, qa);
  cc->add_option("--output", qa.output, "also write 'vertex component' lines to this file");
  cc->add_flag("--json", qa.json, json_help);
  cc->callback([&c] { c.action = [&c] { return run_query(c.qa, cmd_cc, PHEAP_GRAPH_ACROSS(cmd_cc_mpi)); }; });

  auto* exp = app.add_subcommand("export", "write the graph's edges; ingesting them with the same "
                                           "flags rebuilds an equal graph");
  add_query_options(*exp, qa);
  exp->add_option("--format", qa.format, "text or binary (default text)")->check(CLI::IsMember({"text", "binary"}));
  exp->add_option("--output", qa.output, "file to write (default: - for stdout)");
  exp->add_flag("-q,--quiet", qa.quiet, "no progress on stderr");
  exp->callback([&c] { c.action = [&c] { return run_query(c.qa, cmd_export, PHEAP_GRAPH_ACROSS(cmd_export_mpi)); }; });
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pheap-graph: generate, ingest and query persistent graphs.", "pheap-graph"};
  tool_support::set_up(app, "pheap-graph", "");
  command_line c;
  define_generate(app, c);
  define_ingest(app, c);
  define_queries(app, c);
  std::vector<std::string> args = normalise_weighted(argc, argv);
  std::vector<char*> av;
  for (auto& a : args) av.push_back(a.data());
  mpi_session mpi;
  g_mpi = &mpi;
  return tool_support::parse_and_run(app, static_cast<int>(av.size()), av.data(), c.action, describe);
}
