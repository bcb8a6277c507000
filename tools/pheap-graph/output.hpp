// tools/pheap-graph/output.hpp — what pheap-graph's queries print: the text and --json forms
// of stats, bfs and cc (schemas: tools/README.md), the ingestion record, --output files.
#pragma once

#include <pheap/graph/algorithms.hpp>
#include <pheap/graph/store.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "commands.hpp"

namespace pheap_graph {

using nlohmann::json;

std::string dump(const json& j);
void print_json(const json& j);

// The ingestion record of a datastore's graph (null without one), as stats prints it.
json ingestion_json(const pg::persistent_ingest_state* st);
#ifdef PHEAP_GRAPH_MPI
// The ingestion records of every rank as one: edges summed; "input" and "byte_offset" of an
// unfinished job are the lowest unfinished rank's (tools/README.md).
json ingestion_json(std::vector<pheap::manager>& ranks, const std::string& name);
#endif

// Where a query's graph comes from: a datastore, or every rank of a distributed one.
struct graph_source {
  std::string path;
  std::uint64_t watermark = 0;  // the datastore's, or the global one
  json ingestion;               // ingestion_json; summed over the ranks when distributed
  std::uint64_t ranks = 0;      // 0: not distributed
  pg::walk_hints hints;         // set when the heap does not fit in the buffer (with_graph)
};

// The counts, the degree distribution and the ingestion record, as `stats --json` prints them.
json stats_json(const pg::graph_counts& c, const std::map<std::uint64_t, std::uint64_t>& hist, bool directed,
                pg::weight_kind kind, std::size_t banks, const graph_source& src, const query_args& a);
// --json: the document; else the text form (the reliability campaigns parse its "ingestion" line).
void print_stats_or_json(const json& j, const query_args& a);
// stats --follow: the document on one line (--json), or one line of text: the time, the
// watermark, the counts and the ingestion record. Flushed at once.
void print_follow_line(const json& j, const query_args& a);

// What bfs prints, from one process or from every rank.
struct bfs_report {
  std::uint64_t reached = 0, vertices = 0, max_level = 0;
  std::vector<std::uint64_t> per_level;
  std::function<void(std::FILE*)> rows;  // "vertex level parent" lines for --output
};
int print_bfs(const bfs_report& r, const graph_source& src, const query_args& a);

// What cc prints, from one process or from every rank.
struct cc_report {
  bool weakly = false;
  std::uint64_t components = 0, largest = 0, vertices = 0;
  std::function<void(std::FILE*)> rows;  // "vertex component" lines for --output
};
int print_cc(const cc_report& r, const graph_source& src, const query_args& a);

}  // namespace pheap_graph
