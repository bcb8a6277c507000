// tools/pheap-graph/commands.hpp — pheap-graph's commands (private to the tool): their
// arguments, as the command line (main.cpp) fills them, the commands themselves (ingest.cpp:
// generate and ingest; queries.cpp: stats, bfs, cc, export, each also across the ranks under
// mpirun) and what they share (common.cpp). What the queries print: output.hpp.
#pragma once

#include <pheap/graph/rmat.hpp>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/cli.hpp"

namespace pheap_graph {

namespace pg = pheap::graph;

constexpr int exit_failure = tool_support::exit_failure;
constexpr int exit_usage = tool_support::exit_usage;
constexpr int exit_bad_input = tool_support::exit_bad_input;

// A usage problem found after parsing (exit 2).
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Exit 2 for usage errors, else as the pheap tool (tools/support/cli.hpp).
tool_support::failure describe(const std::exception& e);

// MPI in this process: initialised only when mpirun launched it (Open MPI and PMIx set these
// variables before main), so a plain run never touches MPI. Without MPI built in, never.
struct mpi_session {
  bool active = false;
  int rank = 0, size = 1;
  mpi_session();
  ~mpi_session();
  mpi_session(const mpi_session&) = delete;
  mpi_session& operator=(const mpi_session&) = delete;
};
extern const mpi_session* g_mpi;  // main's

#ifdef PHEAP_GRAPH_MPI
// A rank whose failure another rank reports leaves a moment later: mpirun ends the whole job
// at the first non-zero exit, which must not cut the reporter's message.
[[noreturn]] void leave_after_reporter(int code);
#else
// A usage error: `ds` is distributed and this pheap-graph has no MPI.
[[noreturn]] void no_mpi_built_in(const std::string& ds);
#endif

// A distributed datastore (pheap/mpi/manifest.hpp): D/pheap.manifest and a datastore per rank.
bool is_distributed(const std::string& ds);

// ---- generate -----------------------------------------------------------------------------

struct generate_args {
  pg::rmat_params p;
  std::string weights = "none", format = "text", output;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  bool quiet = false;
};

int cmd_generate(const generate_args& a);

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
  std::string huge_pages;  // --huge-pages ("": the library's default, PHEAP_HUGE_PAGES)
  bool undirected = false, skip_bad_lines = false, reingest = false, abandon = false, quiet = false;
};

int cmd_ingest(const ingest_args& a);

// ---- queries ------------------------------------------------------------------------------

struct query_args {
  std::string datastore, name = "graph", output, format = "text";
  std::uint64_t source = 0, buffer_size = 0;
  std::string huge_pages;  // --huge-pages ("": the library's default, PHEAP_HUGE_PAGES)
  bool json = false, degrees = false, quiet = false;
  bool follow = false;  // stats --follow: a line per new watermark
  std::uint64_t follow_count = 0;  // --follow-count: stop after this many lines (0: never)
};

int cmd_stats(const query_args& a);
// stats --follow: a line (--json: a JSON document on one line) for the watermark the datastore
// has now, then one per new watermark (manager::refresh), until SIGINT or SIGTERM (exit 0),
// --follow-count lines, or the datastore is gone. Needs store format 4 (a reader beside the
// writer).
int cmd_stats_follow(const query_args& a);
int cmd_bfs(const query_args& a);
int cmd_cc(const query_args& a);
int cmd_export(const query_args& a);
#ifdef PHEAP_GRAPH_MPI
// The same queries under mpirun on a distributed datastore: every rank runs them, rank 0 prints.
int cmd_stats_mpi(const query_args& a);
int cmd_bfs_mpi(const query_args& a);
int cmd_cc_mpi(const query_args& a);
int cmd_export_mpi(const query_args& a);
#endif

}  // namespace pheap_graph
