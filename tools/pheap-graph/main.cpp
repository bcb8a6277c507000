// pheap-graph — generate, ingest and query persistent graphs. This file is its command line:
// the options of every command and what each runs (the commands: commands.hpp).
// `pheap-graph --help` and `pheap-graph COMMAND --help` list every option; tools/README.md
// documents the --json schemas.
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
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "support/cli.hpp"

namespace pheap_graph {
namespace {

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
  tool_support::add_huge_pages_option(c, a.huge_pages);
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
  tool_support::add_huge_pages_option(*ing, ia.huge_pages);
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
  stats->add_flag("--follow", qa.follow,
                  "keep reading while a writer (pheap-graph ingest) runs: a line for the current "
                  "watermark, then one per new watermark (with --json, a JSON document on one "
                  "line each), until SIGINT or SIGTERM (exit 0) or the datastore is gone; on a distributed "
                  "datastore, the job's global watermark");
  stats->add_option("--follow-count", qa.follow_count,
                    "with --follow: stop (exit 0) after this many lines (default 0: never)")
      ->needs("--follow");
  stats->callback([&c] {
    c.action = [&c] {
      if (c.qa.follow) return run_query(c.qa, cmd_stats_follow, nullptr);
      return run_query(c.qa, cmd_stats, PHEAP_GRAPH_ACROSS(cmd_stats_mpi));
    };
  });

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
}  // namespace pheap_graph

int main(int argc, char** argv) {
  using namespace pheap_graph;
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

