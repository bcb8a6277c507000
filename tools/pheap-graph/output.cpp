// What pheap-graph's queries print (tools/pheap-graph/output.hpp).
#include "output.hpp"

#include <pheap/error.hpp>

#include <cerrno>
#include <chrono>
#include <cinttypes>

namespace pheap_graph {

std::string dump(const json& j) { return j.dump(2, ' ', false, json::error_handler_t::replace); }

void print_json(const json& j) { std::printf("%s\n", dump(j).c_str()); }

namespace {
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

}  // namespace

json ingestion_json(const pg::persistent_ingest_state* st) {
  if (st == nullptr) return nullptr;
  json j{{"jobs_completed", st->jobs_completed}, {"total_edges", st->total_edges}, {"unfinished", nullptr}};
  if (st->active) {
    j["unfinished"] = {{"input", st->input_index + 1}, {"byte_offset", st->byte_offset},
                       {"edges", st->edges}, {"inputs", st->description.c_str()}};
  }
  return j;
}

#ifdef PHEAP_GRAPH_MPI
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

namespace {
json degree_json(const std::map<std::uint64_t, std::uint64_t>& hist, const query_args& a) {
  json dist = json::array();
  if (a.degrees) {
    for (const auto& [d, n] : hist) dist.push_back({{"degree", d}, {"count", n}});
  } else {
    for (const auto& [lo, hi, n] : log2_buckets(hist)) dist.push_back({{"lo", lo}, {"hi", hi}, {"count", n}});
  }
  return dist;
}

}  // namespace

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

namespace {
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

}  // namespace

void print_stats_or_json(const json& j, const query_args& a) {
  if (a.json) {
    print_json(j);
  } else {
    print_stats(j, a);
  }
}

void print_follow_line(const json& j, const query_args& a) {
  if (a.json) {
    std::printf("%s\n", j.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
  } else {
    const std::uint64_t now_ns = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                                 std::chrono::system_clock::now().time_since_epoch())
                                                                 .count());
    std::printf("%s  watermark %" PRIu64 "  vertices %" PRIu64 "  edges %" PRIu64 "  arcs %" PRIu64
                "  max degree %" PRIu64,
                pheap::utc_time_string(now_ns).c_str(), j["watermark"].get<std::uint64_t>(),
                j["vertices"].get<std::uint64_t>(), j["edges"].get<std::uint64_t>(), j["arcs"].get<std::uint64_t>(),
                j["max_degree"].get<std::uint64_t>());
    if (const json& in = j["ingestion"]; !in.is_null()) {
      std::printf("  ingested %" PRIu64 " edges (%" PRIu64 " job(s) completed", in["total_edges"].get<std::uint64_t>(),
                  in["jobs_completed"].get<std::uint64_t>());
      if (const json& u = in["unfinished"]; !u.is_null()) {
        std::printf(", one at %" PRIu64 " edges", u["edges"].get<std::uint64_t>());
      }
      std::printf(")");
    }
    std::printf("\n");
  }
  std::fflush(stdout);
}

namespace {
// Writes "# header" and one line per row to `path`; throws pheap::error naming it on failure.
template <class Rows>
void write_rows(const std::string& path, const char* header, Rows&& rows) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) pheap::throw_errno(errno, path, "create output");
  std::fprintf(f, "%s\n", header);
  rows(f);
  if (std::ferror(f) != 0 || std::fclose(f) != 0) pheap::throw_errno(errno, path, "write output");
}

}  // namespace

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

// What cc prints, from one process or from every rank.
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

}  // namespace pheap_graph
