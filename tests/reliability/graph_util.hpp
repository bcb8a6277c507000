// Driving the graph tools from the reliability campaigns: `pheap-graph` (generate, ingest,
// stats, export) and `pheap check`, located through the compile definitions
// PHEAP_GRAPH_BIN / PHEAP_TOOL_BIN that tests/reliability/CMakeLists.txt sets to the built
// targets, and the reference they are compared with: the input's edges in file order, whose
// first N (as a sorted multiset) are exactly what a graph with N committed edges must export.
#pragma once

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "reliability/reliability_util.hpp"

namespace pheap::test {

using edge_list = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

// "u v" per line (comments and blank lines skipped), in file order.
inline edge_list parse_edges(const std::string& text) {
  edge_list v;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line[0] == '%') continue;
    std::uint64_t a, b;
    if (std::sscanf(line.c_str(), "%" SCNu64 " %" SCNu64, &a, &b) == 2) v.emplace_back(a, b);
  }
  return v;
}

inline edge_list read_edges(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_edges(ss.str());
}

inline edge_list sorted_prefix(const edge_list& all, std::uint64_t n) {
  edge_list v(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(std::min<std::uint64_t>(n, all.size())));
  std::sort(v.begin(), v.end());
  return v;
}

// "" if `got` == `want`, else a short description of the difference.
inline std::string diff_edges(const edge_list& got, const edge_list& want) {
  if (got == want) return {};
  std::string d = "graph has " + std::to_string(got.size()) + " edges, reference " +
                  std::to_string(want.size());
  edge_list missing, extra;
  std::set_difference(want.begin(), want.end(), got.begin(), got.end(), std::back_inserter(missing));
  std::set_difference(got.begin(), got.end(), want.begin(), want.end(), std::back_inserter(extra));
  d += "; " + std::to_string(missing.size()) + " missing, " + std::to_string(extra.size()) + " extra";
  if (!missing.empty()) d += " (first missing " + std::to_string(missing[0].first) + " " + std::to_string(missing[0].second) + ")";
  if (!extra.empty()) d += " (first extra " + std::to_string(extra[0].first) + " " + std::to_string(extra[0].second) + ")";
  return d;
}

class graph_tools {
 public:
  std::string graph = PHEAP_GRAPH_BIN;
  std::string tool = PHEAP_TOOL_BIN;

  // The ingestion command every campaign runs (plus `extra`): small batches so watermarks are
  // frequent, 64 KiB pages.
  std::vector<std::string> ingest_argv(const std::string& ds, const std::string& input,
                                       const std::vector<std::string>& extra) const {
    std::vector<std::string> a{graph, "ingest", "--datastore", ds, "--batch-size", "500",
                               "--capacity", "256M", "--page-size", "64K", "--quiet"};
    a.insert(a.end(), extra.begin(), extra.end());
    a.push_back(input);
    return a;
  }

  void generate(const std::string& out, unsigned scale, unsigned edge_factor, std::uint64_t seed) const {
    const auto r = run_child({graph, "generate", "--scale", std::to_string(scale), "--edge-factor",
                              std::to_string(edge_factor), "--seed", std::to_string(seed),
                              "--threads", "1", "--output", out});
    if (!r.exited(0)) throw std::runtime_error("pheap-graph generate failed: " + r.describe());
  }

  child_result ingest(const std::string& ds, const std::string& input,
                      const std::vector<std::string>& extra) const {
    return run_child(ingest_argv(ds, input, extra));
  }

  child_result check(const std::string& ds) const { return run_child({tool, "check", ds}); }

  // Edges committed in the datastore according to its persistent ingestion state (0 when the
  // datastore or the state does not exist yet). Throws if `stats` fails.
  std::uint64_t committed_edges(const std::string& ds) const {
    if (!std::filesystem::exists(ds)) return 0;
    const auto r = run_child({graph, "stats", "--datastore", ds});
    if (!r.exited(0)) throw std::runtime_error("pheap-graph stats " + ds + " failed: " + r.describe());
    const auto lines = lines_with(r.out, "ingestion ");
    if (lines.empty()) return 0;
    // "ingestion   J job(s) completed, T edges ingested in total[; UNFINISHED job ... (N
    // edges) ...]": T counts the unfinished job's committed edges too.
    std::uint64_t jobs = 0, total = 0;
    if (std::sscanf(lines[0].c_str(), " %" SCNu64 " job(s) completed, %" SCNu64, &jobs, &total) != 2) {
      throw std::runtime_error("pheap-graph stats " + ds + ": unexpected line: " + lines[0]);
    }
    return total;
  }

  // The graph's edges as exported, sorted (empty when the datastore does not exist).
  edge_list exported_edges(const std::string& ds) const {
    if (!std::filesystem::exists(ds)) return {};
    const auto r = run_child({graph, "export", "--datastore", ds, "--output", "-"});
    if (!r.exited(0)) throw std::runtime_error("pheap-graph export " + ds + " failed: " + r.describe());
    auto v = parse_edges(r.out);
    std::sort(v.begin(), v.end());
    return v;
  }
};

}  // namespace pheap::test
