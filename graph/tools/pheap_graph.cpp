// pheap-graph — generate, ingest and query persistent graphs.
//
//   pheap-graph generate --scale S [--edge-factor E] [--a A --b B --c C] [--seed N]
//                        [--scramble] [--weights none|u64|f32] [--format text|binary]
//                        [--threads N] --output FILE|-
//   pheap-graph ingest --datastore D [--name G] [--threads N] [--batch-size B]
//                      [--flush-every N|Ns] [--undirected] [--weighted [u64|f32]]
//                      [--format text|binary] [--skip-bad-lines] [--reingest]
//                      [--abandon-incomplete] [--banks N] [--capacity BYTES]
//                      [--page-size BYTES] [--buffer-size BYTES] [--quiet] INPUT...
//   pheap-graph stats  --datastore D [--name G] [--degrees]
//   pheap-graph bfs    --datastore D [--name G] --source S [--output FILE]
//   pheap-graph cc     --datastore D [--name G] [--output FILE]
//   pheap-graph export --datastore D [--name G] [--format text|binary] [--output FILE|-]
//
// Exit status: 0 success; 1 runtime error (I/O, heap); 2 usage error (bad option or PHEAP_*
// value, job mismatch); 3 malformed input (the edges before the bad line are committed; fix
// the input or rerun with --skip-bad-lines to resume at that line).
//
// ingest is exactly-once and resumable (pheap/graph/ingest.hpp): rerunning the same command
// after a crash continues from the last watermark; rerunning it after success does nothing.
// stdin ("-") cannot be resumed. Query commands open the datastore read-only.
#include <pheap/graph/algorithms.hpp>
#include <pheap/graph/edge_io.hpp>
#include <pheap/graph/ingest.hpp>
#include <pheap/graph/rmat.hpp>
#include <pheap/graph/store.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace pg = pheap::graph;

namespace {

struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const char* const kUsage =
    "usage:\n"
    "  pheap-graph generate --scale S [--edge-factor E] [--a A --b B --c C] [--seed N]\n"
    "                       [--scramble] [--weights none|u64|f32] [--format text|binary]\n"
    "                       [--threads N] --output FILE|-\n"
    "  pheap-graph ingest --datastore D [--name G] [--threads N] [--batch-size B]\n"
    "                     [--flush-every N|Ns] [--undirected] [--weighted [u64|f32]]\n"
    "                     [--format text|binary] [--skip-bad-lines] [--reingest]\n"
    "                     [--abandon-incomplete] [--banks N] [--capacity BYTES]\n"
    "                     [--page-size BYTES] [--buffer-size BYTES] [--quiet] INPUT...|-\n"
    "  pheap-graph stats  --datastore D [--name G] [--degrees]\n"
    "  pheap-graph bfs    --datastore D [--name G] --source S [--output FILE]\n"
    "  pheap-graph cc     --datastore D [--name G] [--output FILE]\n"
    "  pheap-graph export --datastore D [--name G] [--format text|binary] [--output FILE|-]\n";

// Minimal option parser: "--key value", "--flag", positional arguments. Each subcommand
// declares which keys take values and which are flags; anything else is a usage error.
struct args {
  std::map<std::string, std::string> values;
  std::map<std::string, bool> flags;
  std::vector<std::string> positional;

  bool flag(const std::string& k) const { return flags.count(k) != 0; }
  std::optional<std::string> get(const std::string& k) const {
    auto it = values.find(k);
    if (it == values.end()) return std::nullopt;
    return it->second;
  }
  std::string need(const std::string& k) const {
    auto v = get(k);
    if (!v) throw usage_error("missing required option --" + k);
    return *v;
  }
};

args parse_args(int argc, char** argv, int first, const std::vector<std::string>& valued,
                const std::vector<std::string>& flagged,
                const std::vector<std::string>& optional_valued = {}) {
  args a;
  auto in = [](const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  bool only_positional = false;
  for (int i = first; i < argc; ++i) {
    std::string s = argv[i];
    if (only_positional || s == "-" || s.rfind("--", 0) != 0) {
      a.positional.push_back(s);
      continue;
    }
    if (s == "--") {
      only_positional = true;
      continue;
    }
    std::string key = s.substr(2), val;
    bool has_inline = false;
    if (auto eq = key.find('='); eq != std::string::npos) {
      val = key.substr(eq + 1);
      key = key.substr(0, eq);
      has_inline = true;
    }
    if (in(valued, key)) {
      if (!has_inline) {
        if (i + 1 >= argc) throw usage_error("option --" + key + " needs a value");
        val = argv[++i];
      }
      a.values[key] = val;
    } else if (in(optional_valued, key)) {
      // --weighted [u64|f32]: takes the next argument only if it is a weight kind.
      if (!has_inline && i + 1 < argc &&
          (std::string(argv[i + 1]) == "u64" || std::string(argv[i + 1]) == "f32")) {
        val = argv[++i];
      }
      a.values[key] = val;
    } else if (in(flagged, key) && !has_inline) {
      a.flags[key] = true;
    } else {
      throw usage_error("unknown option --" + key);
    }
  }
  return a;
}

std::uint64_t parse_u64(const std::string& s, const std::string& what) {
  std::uint64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) {
    throw usage_error("bad " + what + " '" + s + "' (expected an unsigned integer)");
  }
  return v;
}

// "123", "64K", "2M", "1G", "1T" with binary multipliers (for byte sizes).
std::uint64_t parse_bytes(const std::string& s, const std::string& what) {
  if (s.empty()) throw usage_error("empty " + what);
  std::uint64_t mult = 1;
  std::string num = s;
  switch (s.back()) {
    case 'K': case 'k': mult = 1ull << 10; break;
    case 'M': case 'm': mult = 1ull << 20; break;
    case 'G': case 'g': mult = 1ull << 30; break;
    case 'T': case 't': mult = 1ull << 40; break;
    default: break;
  }
  if (mult != 1) num.pop_back();
  const std::uint64_t v = parse_u64(num, what);
  if (v > ~0ull / mult) throw usage_error(what + " '" + s + "' is too large");
  return v * mult;
}

// "N" edges (with optional k/M/G decimal suffix) or "Ns" seconds ("0.5s").
void parse_flush_every(const std::string& s, pg::ingest_options& o) {
  if (!s.empty() && s.back() == 's') {
    double secs = 0;
    const std::string num = s.substr(0, s.size() - 1);
    auto r = std::from_chars(num.data(), num.data() + num.size(), secs);
    if (r.ec != std::errc() || r.ptr != num.data() + num.size() || !(secs > 0)) {
      throw usage_error("bad --flush-every '" + s + "' (expected N edges or Ns seconds)");
    }
    o.flush_every_seconds = secs;
    return;
  }
  std::uint64_t mult = 1;
  std::string num = s;
  if (!num.empty() && (num.back() == 'k' || num.back() == 'K')) mult = 1000;
  if (!num.empty() && num.back() == 'M') mult = 1000000;
  if (!num.empty() && num.back() == 'G') mult = 1000000000;
  if (mult != 1) num.pop_back();
  o.flush_every_edges = parse_u64(num, "--flush-every") * mult;
  if (o.flush_every_edges == 0) throw usage_error("--flush-every must be > 0");
}

double parse_double(const std::string& s, const std::string& what) {
  double v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) throw usage_error("bad " + what + " '" + s + "'");
  return v;
}

// ---- generate -----------------------------------------------------------------------------

int cmd_generate(int argc, char** argv) {
  const args a = parse_args(argc, argv, 2,
                            {"scale", "edge-factor", "a", "b", "c", "seed", "weights", "format",
                             "threads", "output"},
                            {"scramble"});
  if (!a.positional.empty()) throw usage_error("generate takes no positional arguments");
  pg::rmat_params p;
  p.scale = static_cast<unsigned>(parse_u64(a.need("scale"), "--scale"));
  if (auto v = a.get("edge-factor")) p.edge_factor = parse_u64(*v, "--edge-factor");
  if (auto v = a.get("a")) p.a = parse_double(*v, "--a");
  if (auto v = a.get("b")) p.b = parse_double(*v, "--b");
  if (auto v = a.get("c")) p.c = parse_double(*v, "--c");
  if (auto v = a.get("seed")) p.seed = parse_u64(*v, "--seed");
  if (auto v = a.get("weights")) p.weights = pg::parse_weight_kind(*v);
  p.scramble = a.flag("scramble");
  const auto fmt = pg::parse_input_format(a.get("format").value_or("text"));
  const unsigned threads = static_cast<unsigned>(
      parse_u64(a.get("threads").value_or(std::to_string(std::max(1u, std::thread::hardware_concurrency()))), "--threads"));
  pg::rmat_generator gen(p);
  pg::edge_writer out(a.need("output"), fmt, p.weights);
  std::vector<pg::edge> buf(std::size_t{1} << 20);
  for (std::uint64_t i = 0; i < gen.num_edges(); i += buf.size()) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), gen.num_edges() - i));
    gen.generate(i, n, buf.data(), threads);
    out.write(buf.data(), n);
  }
  out.close();
  std::fprintf(stderr, "generated %" PRIu64 " edges (scale %u, edge factor %" PRIu64 ", seed %" PRIu64 ")\n",
               gen.num_edges(), p.scale, p.edge_factor, p.seed);
  return 0;
}

// ---- ingest -------------------------------------------------------------------------------

std::string human_rate(double x) {
  char b[32];
  if (x >= 1e6) std::snprintf(b, sizeof b, "%.2fM", x / 1e6);
  else if (x >= 1e3) std::snprintf(b, sizeof b, "%.1fk", x / 1e3);
  else std::snprintf(b, sizeof b, "%.0f", x);
  return b;
}

// Creates datastore `ds` with an empty graph, atomically with respect to kill -9: it is built
// under a temporary sibling name and renamed into place once its first watermark holds the
// graph, so a rerun finds either no datastore (and starts over) or a complete one.
void create_datastore(const std::string& ds, const pheap::options& mo, const std::string& name,
                      bool directed, pg::weight_kind wk, std::size_t banks) {
  namespace fs = std::filesystem;
  const fs::path target = fs::absolute(ds).lexically_normal();
  const fs::path tmp = target.parent_path() / ("." + target.filename().string() + ".pheap-graph-creating");
  std::error_code ec;
  fs::remove_all(tmp, ec);  // leftover of a creation that was killed; only ever ours
  {
    pheap::manager m(pheap::create_only, tmp.string(), mo);
    switch (wk) {
      case pg::weight_kind::none: pg::open_or_create_graph<void>(m, name, directed, banks); break;
      case pg::weight_kind::u64: pg::open_or_create_graph<std::uint64_t>(m, name, directed, banks); break;
      case pg::weight_kind::f32: pg::open_or_create_graph<float>(m, name, directed, banks); break;
    }
    m.flush();
  }
  fs::rename(tmp, target);
  const int dfd = ::open(target.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);  // make the rename durable
    ::close(dfd);
  }
}

int cmd_ingest(int argc, char** argv) {
  const args a = parse_args(argc, argv, 2,
                            {"datastore", "name", "threads", "batch-size", "flush-every", "format",
                             "banks", "capacity", "page-size", "buffer-size"},
                            {"undirected", "skip-bad-lines", "reingest", "abandon-incomplete", "quiet"},
                            {"weighted"});
  if (a.positional.empty()) throw usage_error("ingest needs at least one INPUT (a file or '-' for stdin)");
  const std::string ds = a.need("datastore");
  const std::string name = a.get("name").value_or("graph");
  pg::ingest_options o;
  o.format = pg::parse_input_format(a.get("format").value_or("text"));
  o.threads = static_cast<unsigned>(parse_u64(a.get("threads").value_or("1"), "--threads"));
  if (o.threads == 0) throw usage_error("--threads must be >= 1");
  o.batch_size = static_cast<std::size_t>(parse_u64(a.get("batch-size").value_or(std::to_string(1 << 20)), "--batch-size"));
  if (o.batch_size == 0) throw usage_error("--batch-size must be >= 1");
  if (auto v = a.get("flush-every")) parse_flush_every(*v, o);
  o.skip_bad_lines = a.flag("skip-bad-lines");
  o.reingest = a.flag("reingest");
  o.abandon_incomplete = a.flag("abandon-incomplete");
  const bool directed = !a.flag("undirected");
  pg::weight_kind wk = pg::weight_kind::none;
  if (auto v = a.get("weighted")) wk = v->empty() ? pg::weight_kind::u64 : pg::parse_weight_kind(*v);
  const std::size_t banks = static_cast<std::size_t>(parse_u64(a.get("banks").value_or("1024"), "--banks"));
  if (banks == 0) throw usage_error("--banks must be >= 1");

  pheap::options mo;
  if (auto v = a.get("capacity")) mo.capacity = parse_bytes(*v, "--capacity");
  if (auto v = a.get("page-size")) mo.page_size = static_cast<std::uint32_t>(parse_bytes(*v, "--page-size"));
  if (auto v = a.get("buffer-size")) mo.pager.buffer_size = static_cast<std::size_t>(parse_bytes(*v, "--buffer-size"));

  if (!std::filesystem::exists(ds)) create_datastore(ds, mo, name, directed, wk, banks);
  pheap::manager m(pheap::open_only, ds, mo);

  const bool tty = ::isatty(STDERR_FILENO) != 0 && !a.flag("quiet");
  auto last_print = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  auto progress = [&](const pg::ingest_progress& p) {
    if (!tty) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_print < std::chrono::milliseconds(250)) return;
    last_print = now;
    std::fprintf(stderr, "\r[input %zu/%zu] %" PRIu64 " edges  %s edges/s  %.1f MiB read  watermark %" PRIu64 "   ",
                 p.input_index + 1, p.inputs, p.edges,
                 human_rate(p.seconds > 0 ? static_cast<double>(p.edges_this_run) / p.seconds : 0).c_str(),
                 static_cast<double>(p.bytes_this_run) / (1 << 20), p.watermark);
    std::fflush(stderr);
  };

  auto run = [&](auto& g, pg::persistent_ingest_state& st) -> int {
    pg::ingest_report r;
    try {
      r = pg::ingest(g, st, a.positional, o, [&] { return m.flush(); }, progress);
    } catch (const pg::input_error& e) {
      if (tty) std::fputc('\n', stderr);
      std::fprintf(stderr, "pheap-graph ingest: %s\n", e.what());
      std::fprintf(stderr,
                   "pheap-graph ingest: %" PRIu64 " edges of this job are committed (watermark %" PRIu64
                   "); fix the input or rerun with --skip-bad-lines to continue at that line\n",
                   st.edges, m.epoch());
      return 3;
    } catch (const pg::ingest_usage_error& e) {
      std::fprintf(stderr, "pheap-graph ingest: %s\n", e.what());
      return 2;
    } catch (const std::exception& e) {
      // A batch may be half inserted: do not let the manager's destructor commit it. Exit
      // without destructors; the datastore stays at its last watermark (exactly-once holds).
      std::fprintf(stderr, "pheap-graph ingest: %s\npheap-graph ingest: stopped; the datastore keeps its last watermark %" PRIu64 "\n",
                   e.what(), m.epoch());
      std::fflush(stderr);
      std::_Exit(1);
    }
    if (tty) std::fputc('\n', stderr);
    if (r.already_done) {
      std::printf("nothing to do: these inputs were already ingested into '%s' (use --reingest to add them again)\n",
                  name.c_str());
      return 0;
    }
    const auto& f = r.final;
    std::printf("ingested %" PRIu64 " edges (%" PRIu64 " this run%s) from %zu input(s) in %.2f s: %s edges/s, %.1f MiB read, "
                "%" PRIu64 " bad lines skipped, watermark %" PRIu64 ", graph has %" PRIu64 " vertices and %" PRIu64 " arcs\n",
                f.edges, f.edges_this_run,
                r.resumed ? (", resumed at edge " + std::to_string(r.resumed_at_edges)).c_str() : "",
                f.inputs, f.seconds,
                human_rate(f.seconds > 0 ? static_cast<double>(f.edges_this_run) / f.seconds : 0).c_str(),
                static_cast<double>(f.bytes_this_run) / (1 << 20), f.bad_lines, f.watermark,
                g.num_vertices(), g.num_arcs());
    return 0;
  };

  try {
    switch (wk) {
      case pg::weight_kind::none: {
        auto& g = pg::open_or_create_graph<void>(m, name, directed, banks);
        return run(g, *pg::find_ingest_state(m, name));
      }
      case pg::weight_kind::u64: {
        auto& g = pg::open_or_create_graph<std::uint64_t>(m, name, directed, banks);
        return run(g, *pg::find_ingest_state(m, name));
      }
      case pg::weight_kind::f32: {
        auto& g = pg::open_or_create_graph<float>(m, name, directed, banks);
        return run(g, *pg::find_ingest_state(m, name));
      }
    }
  } catch (const pheap::error& e) {
    if (e.code() != pheap::errc::invalid_argument) throw;
    std::fprintf(stderr, "pheap-graph ingest: %s\n", e.what());  // the graph differs from the options
    return 2;
  }
  return 1;
}

// ---- queries ------------------------------------------------------------------------------

struct query_ctx {
  pheap::manager m;
  std::string name;
};

query_ctx open_query(const args& a) {
  return {pheap::manager(pheap::open_read_only, a.need("datastore")), a.get("name").value_or("graph")};
}

int cmd_stats(int argc, char** argv) {
  const args a = parse_args(argc, argv, 2, {"datastore", "name"}, {"degrees"});
  auto q = open_query(a);
  pg::visit_graph(q.m, q.name, [&](const auto& g) {
    const auto c = pg::count(g);
    const std::uint64_t edges = g.directed() ? c.arcs : (c.arcs + c.self_loops) / 2;
    std::printf("graph       %s (%s, weights %s, %zu banks) in %s, watermark %" PRIu64 "\n", q.name.c_str(),
                g.directed() ? "directed" : "undirected", pg::to_string(std::remove_cvref_t<decltype(g)>::kind),
                g.num_banks(), q.m.path().c_str(), q.m.epoch());
    std::printf("vertices    %" PRIu64 "\n", c.vertices);
    std::printf("edges       %" PRIu64 "\n", edges);
    std::printf("arcs        %" PRIu64 " (stored adjacency entries)\n", c.arcs);
    std::printf("self-loops  %" PRIu64 "\n", c.self_loops);
    std::printf("max degree  %" PRIu64 "\n", c.max_degree);
    std::printf("isolated    %" PRIu64 " (vertices without out-arcs)\n", c.isolated);
    const auto hist = pg::degree_distribution(g);
    if (a.flag("degrees")) {
      std::printf("degree distribution (degree count):\n");
      for (const auto& [d, n] : hist) std::printf("  %" PRIu64 " %" PRIu64 "\n", d, n);
    } else {
      std::printf("degree distribution (log2 buckets [lo, hi] count):\n");
      std::map<unsigned, std::uint64_t> buckets;
      for (const auto& [d, n] : hist) buckets[d == 0 ? 0 : 1 + static_cast<unsigned>(63 - __builtin_clzll(d))] += n;
      for (const auto& [b, n] : buckets) {
        const std::uint64_t lo = b == 0 ? 0 : (1ull << (b - 1)), hi = b == 0 ? 0 : (1ull << b) - 1;
        std::printf("  [%" PRIu64 ", %" PRIu64 "] %" PRIu64 "\n", lo, hi, n);
      }
    }
  });
  if (const auto* st = q.m.find<pg::persistent_ingest_state>(pg::ingest_name(q.name)).first) {
    std::printf("ingestion   %" PRIu64 " job(s) completed, %" PRIu64 " edges ingested in total", st->jobs_completed,
                st->total_edges);
    if (st->active) {
      std::printf("; UNFINISHED job at input %" PRIu64 " byte %" PRIu64 " (%" PRIu64 " edges): %s", st->input_index + 1,
                  st->byte_offset, st->edges, st->description.c_str());
    }
    std::printf("\n");
  }
  return 0;
}

int cmd_bfs(int argc, char** argv) {
  const args a = parse_args(argc, argv, 2, {"datastore", "name", "source", "output"}, {});
  const std::uint64_t s = parse_u64(a.need("source"), "--source");
  auto q = open_query(a);
  pg::visit_graph(q.m, q.name, [&](const auto& g) {
    if (!g.contains(s)) throw usage_error("source " + std::to_string(s) + " is not a vertex of the graph");
    const auto r = pg::bfs(g, s);
    std::printf("bfs from %" PRIu64 ": reached %" PRIu64 " of %zu vertices, max level %" PRIu64 "\n", s, r.reached,
                r.index.ids.size(), r.max_level);
    std::vector<std::uint64_t> per_level(r.max_level + 1, 0);
    for (auto l : r.level)
      if (l != pg::kUnreached) ++per_level[l];
    for (std::size_t l = 0; l < per_level.size(); ++l) std::printf("  level %zu: %" PRIu64 "\n", l, per_level[l]);
    if (auto out = a.get("output")) {
      std::FILE* f = std::fopen(out->c_str(), "w");
      if (!f) throw std::runtime_error("cannot create " + *out);
      std::fprintf(f, "# vertex level parent\n");
      for (std::size_t i = 0; i < r.index.ids.size(); ++i)
        if (r.level[i] != pg::kUnreached)
          std::fprintf(f, "%" PRIu64 " %" PRIu64 " %" PRIu64 "\n", r.index.ids[i], r.level[i], r.parent[i]);
      if (std::fclose(f) != 0) throw std::runtime_error("write " + *out + " failed");
    }
  });
  return 0;
}

int cmd_cc(int argc, char** argv) {
  const args a = parse_args(argc, argv, 2, {"datastore", "name", "output"}, {});
  auto q = open_query(a);
  pg::visit_graph(q.m, q.name, [&](const auto& g) {
    const auto r = pg::connected_components(g);
    std::printf("%sconnected components: %" PRIu64 ", largest %" PRIu64 " of %zu vertices\n",
                g.directed() ? "weakly " : "", r.components, r.largest, r.index.ids.size());
    if (auto out = a.get("output")) {
      std::FILE* f = std::fopen(out->c_str(), "w");
      if (!f) throw std::runtime_error("cannot create " + *out);
      std::fprintf(f, "# vertex component(smallest member id)\n");
      for (std::size_t i = 0; i < r.index.ids.size(); ++i)
        std::fprintf(f, "%" PRIu64 " %" PRIu64 "\n", r.index.ids[i], r.component[i]);
      if (std::fclose(f) != 0) throw std::runtime_error("write " + *out + " failed");
    }
  });
  return 0;
}

// Writes every edge once, vertices in ascending id order, neighbours in stored order:
// all arcs of a directed graph; arcs with src <= dst of an undirected graph. Ingesting the
// output with the same flags rebuilds an equal graph.
int cmd_export(int argc, char** argv) {
  const args a = parse_args(argc, argv, 2, {"datastore", "name", "format", "output"}, {});
  const auto fmt = pg::parse_input_format(a.get("format").value_or("text"));
  auto q = open_query(a);
  std::uint64_t n = 0;
  pg::visit_graph(q.m, q.name, [&](const auto& g) {
    using G = std::remove_cvref_t<decltype(g)>;
    pg::edge_writer w(a.get("output").value_or("-"), fmt, G::kind);
    const auto ix = pg::build_index(g);
    for (std::uint64_t u : ix.ids) {
      for (const auto& nb : *g.neighbors(u)) {
        const std::uint64_t v = G::dst_of(nb);
        if (!g.directed() && v < u) continue;
        w.write(pg::edge{u, v, G::weight_bits_of(nb)});
        ++n;
      }
    }
    w.close();
  });
  std::fprintf(stderr, "exported %" PRIu64 " edges\n", n);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  try {
    if (cmd == "generate") return cmd_generate(argc, argv);
    if (cmd == "ingest") return cmd_ingest(argc, argv);
    if (cmd == "stats") return cmd_stats(argc, argv);
    if (cmd == "bfs") return cmd_bfs(argc, argv);
    if (cmd == "cc") return cmd_cc(argc, argv);
    if (cmd == "export") return cmd_export(argc, argv);
    std::fprintf(stderr, "pheap-graph: unknown command '%s'\n%s", cmd.c_str(), kUsage);
    return 2;
  } catch (const usage_error& e) {
    std::fprintf(stderr, "pheap-graph %s: %s\n%s", cmd.c_str(), e.what(), kUsage);
    return 2;
  } catch (const pheap::error& e) {  // invalid_argument: a bad option value (exit 2)
    std::fprintf(stderr, "pheap-graph %s: %s\n", cmd.c_str(), e.what());
    return e.code() == pheap::errc::invalid_argument ? 2 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pheap-graph %s: %s\n", cmd.c_str(), e.what());
    return 1;
  }
}
