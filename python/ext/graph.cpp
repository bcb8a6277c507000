#include "graph.hpp"

#include <pheap/crc32c.hpp>
#include <pheap/fault_guard.hpp>
#include <pheap/graph/algorithms.hpp>
#include <pheap/graph/degree_index.hpp>
#include <pheap/graph/ingest.hpp>
#include <pheap/graph/store.hpp>

#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "errors.hpp"
#include "store.hpp"

namespace pyheap {

namespace nb = nanobind;
namespace pg = pheap::graph;
using namespace nb::literals;

namespace {

using u64_array = nb::ndarray<nb::numpy, const std::uint64_t, nb::ndim<1>>;

// A read-only NumPy array owning a DRAM vector (results: vertices, degrees, levels, ...).
nb::object owned_array(std::shared_ptr<const std::vector<std::uint64_t>> v) {
  auto* keep = new std::shared_ptr<const std::vector<std::uint64_t>>(std::move(v));
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<std::shared_ptr<const std::vector<std::uint64_t>>*>(p); });
  const std::size_t n = (*keep)->size();
  return u64_array((*keep)->data(), {n}, owner).cast();
}
nb::object owned_array(std::vector<std::uint64_t>&& v) {
  return owned_array(std::make_shared<const std::vector<std::uint64_t>>(std::move(v)));
}

// Graph datastores are opened with pheap::graph::datastore_defaults() (4 KiB pages for new
// ones) and the PHEAP_* variables, except that missing pages are filled by the pager's workers, not on the faulting
// thread, and that there are 8 of them, not 2 (PHEAP_FAULT_FILL, PHEAP_FAULT_THREADS
// override). A fill on the faulting thread goes through pheap's SIGBUS handler, which a Python
// program may replace (faulthandler.enable() after the open), and makes system calls on heap
// memory fail with EFAULT (a view passed to file.write); 8 workers keep 8 reads in flight for
// the 16 threads of degrees() (bench/README.md, "Python": as fast as faulting-thread fills).
pheap::options graph_options(const std::optional<std::size_t>& buffer_size) {
  pheap::options o = pg::datastore_defaults();
  o.pager.fault_fill = pheap::fault_filling::workers;
  o.pager.fault_threads = 8;
  o = pheap::options::from_env(o);
  if (buffer_size) o.pager.buffer_size = *buffer_size;
  return o;
}

struct cached_degrees {
  std::shared_ptr<const std::vector<std::uint64_t>> ids, degrees;
};

class graph_handle {
 private:
  // f(graph) under the shared lock and the fault guard, holding the GIL.
  template <class F>
  auto read(F&& f) {
    shared_guard g(*s_);
    return read_locked(f);
  }
  // The same without the GIL (the caller released it).
  template <class F>
  auto read_nogil(F&& f) {
    std::shared_lock<std::shared_mutex> l(s_->mu());
    return read_locked(f);
  }
  // A whole-graph walk (bfs, components), as pheap-graph's queries do: the heap is read ahead
  // of it in large requests, as far as the buffer holds it (manager::prefetch_all), instead of
  // one fault per page of a random walk.
  template <class F>
  auto walk_nogil(F&& f) {
    std::shared_lock<std::shared_mutex> l(s_->mu());
    pheap::guard_faults([&] { s_->manager().prefetch_all(); });  // reads the heap header
    return read_locked(f);
  }
  template <class F>
  auto read_locked(F& f) {
    pheap::manager& m = s_->manager();
    return pg::visit_graph(m, name_, [&](auto& g) { return pheap::guard_faults([&] { return f(std::as_const(g)); }); });
  }

 public:
  graph_handle(store_ptr s, std::string name) : s_(std::move(s)), name_(std::move(name)) {
    const pg::graph_info* gi = pg::find_graph_info(s_->manager(), name_);
    if (gi == nullptr) {
      throw pheap::error(pheap::errc::not_found, s_->path(), "open graph " + name_,
                         "no graph named '" + name_ + "' in this datastore");
    }
    directed_ = gi->directed != 0;
    weights_ = gi->weights;
  }

  const std::string& name() const noexcept { return name_; }
  const std::string& path() const noexcept { return s_->path(); }
  bool directed() const noexcept { return directed_; }
  const char* weights() const noexcept { return pg::to_string(weights_); }
  bool read_only() const noexcept { return s_->read_only(); }
  std::uint64_t watermark() const {
    shared_guard g(*s_);
    return s_->manager().epoch();
  }

  std::uint64_t num_vertices() {
    return read([](const auto& g) { return g.num_vertices(); });
  }
  std::uint64_t num_arcs() {
    return read([](const auto& g) { return g.num_arcs(); });
  }

  nb::object vertices() { return degree_array(&pg::persistent_degree_index::ids, &cached_degrees::ids); }
  nb::object degrees() { return degree_array(&pg::persistent_degree_index::degrees, &cached_degrees::degrees); }

  nb::object neighbors(std::uint64_t v) {
    shared_guard g(*s_);
    pheap::manager& m = s_->manager();
    return pg::visit_graph(m, name_, [&](auto& gr) -> nb::object {
      using G = std::remove_cvref_t<decltype(gr)>;
      using nbr = typename G::neighbor_type;
      const auto* l = pheap::guard_faults([&] { return gr.neighbors(v); });
      if (l == nullptr) {
        throw nb::key_error(("pheap: neighbors " + s_->path() + ": " + std::to_string(v) +
                             " is not a vertex of graph '" + name_ + "'").c_str());
      }
      static const nbr empty{};
      const nbr* data = l->empty() ? &empty : &*l->data();
      const std::size_t n = l->size();
      {
        nb::gil_scoped_release nogil;
        s_->touch(data, n * sizeof(nbr));
      }
      const void* key = &gr;  // one key per graph: add_edges may move any list
      if constexpr (std::is_same_v<nbr, std::uint64_t>) {
        return u64_array(data, {n}, view_owner(s_, key)).cast();
      } else {
        using W = decltype(nbr::weight);
        constexpr std::int64_t stride_u64 = sizeof(nbr) / sizeof(std::uint64_t);
        constexpr std::int64_t stride_w = sizeof(nbr) / sizeof(W);
        nb::object dst = u64_array(&data->dst, {n}, view_owner(s_, key), {stride_u64}).cast();
        nb::object w = nb::ndarray<nb::numpy, const W, nb::ndim<1>>(&data->weight, {n}, view_owner(s_, key), {stride_w}).cast();
        return nb::make_tuple(dst, w);
      }
    });
  }

  nb::tuple bfs(std::uint64_t source) {
    std::vector<std::uint64_t> level, parent;
    {
      nb::gil_scoped_release nogil;
      walk_nogil([&](const auto& g) {
        if (!g.contains(source)) {
          throw pheap::error(pheap::errc::invalid_argument, s_->path(), "bfs " + name_,
                             "source " + std::to_string(source) + " is not a vertex of the graph");
        }
        // Out of core, the walk asks for its frontier's lists ahead of it, as pheap-graph bfs.
        pheap::manager& m = s_->manager();
        const pheap::manager_stats st = m.stats();
        pg::walk_hints hints;
        if (pg::walk_read_ahead_wanted(st.store.live_bytes, st.pager.buffer_bytes)) {
          hints.prefetch = [&m](std::span<const std::pair<const void*, std::size_t>> r) { m.prefetch(r); };
        }
        pg::bfs_result r = pg::bfs(g, source, hints);
        level = std::move(r.level);
        parent = std::move(r.parent);
        return 0;
      });
    }
    return nb::make_tuple(owned_array(std::move(level)), owned_array(std::move(parent)));
  }

  nb::object components() {
    std::vector<std::uint64_t> c;
    {
      nb::gil_scoped_release nogil;
      walk_nogil([&](const auto& g) {
        c = pg::connected_components(g).component;
        return 0;
      });
    }
    return owned_array(std::move(c));
  }

  nb::object ingestion() {
    shared_guard g(*s_);
    const pg::persistent_ingest_state* st = pg::find_ingest_state(s_->manager(), name_);
    if (st == nullptr) return nb::none();
    nb::dict d;
    d["jobs_completed"] = st->jobs_completed;
    d["total_edges"] = st->total_edges;
    d["unfinished"] = nb::none();
    if (st->active) {
      nb::dict u;
      u["input"] = st->input_index + 1;
      u["byte_offset"] = st->byte_offset;
      u["edges"] = st->edges;
      u["inputs"] = std::string(st->description.c_str());
      d["unfinished"] = u;
    }
    return d;
  }

  nb::dict add_edges(nb::handle src, nb::handle dst, nb::handle weights, std::uint64_t flush_every,
                     double flush_every_seconds, std::size_t batch_size, unsigned threads, bool reingest,
                     bool abandon_incomplete);

  void close() {
    nb::gil_scoped_release nogil;
    std::unique_lock<std::shared_mutex> l(s_->mu());
    s_->close();
  }

  std::uint64_t refresh() {
    std::uint64_t e = 0;
    {
      nb::gil_scoped_release nogil;
      std::unique_lock<std::shared_mutex> l(s_->mu());
      e = s_->refresh();
    }
    cache_ = {};  // vertices and degrees may have changed
    shared_guard g(*s_);
    if (pheap::guard_faults([&] { return pg::find_graph_info(s_->manager(), name_); }) == nullptr) {
      throw pheap::error(pheap::errc::not_found, s_->path(), "refresh graph " + name_,
                         "no graph named '" + name_ + "' at watermark " + std::to_string(e));
    }
    return e;
  }

 private:
  // vertices() and degrees(): a read-only view of the graph's degree index when it describes
  // the graph as it is (pheap/graph/degree_index.hpp: what the last ingestion job left), read
  // in before it is returned (one sequential request); else an array of a walk of the graph,
  // computed once per handle until add_edges.
  template <class IndexField, class CacheField>
  nb::object degree_array(IndexField index_field, CacheField cache_field) {
    {
      shared_guard sg(*s_);
      pheap::manager& m = s_->manager();
      nb::object view = pg::visit_graph(m, name_, [&](auto& gr) -> nb::object {
        const pg::persistent_degree_index* idx =
            pheap::guard_faults([&] { return pg::find_degree_index(m, name_, std::as_const(gr)); });
        if (idx == nullptr) return nb::none();
        const auto& v = idx->*index_field;
        static const std::uint64_t empty = 0;
        const std::uint64_t* data = v.empty() ? &empty : &*v.data();
        const std::size_t n = v.size();
        {
          nb::gil_scoped_release nogil;
          s_->touch(data, n * sizeof(std::uint64_t));
        }
        const void* key = &gr;  // the graph's key, as neighbors(): add_edges rewrites the index
        return u64_array(data, {n}, view_owner(s_, key)).cast();
      });
      if (!view.is_none()) return view;
    }
    return owned_array(degrees_cache().*cache_field);
  }

  const cached_degrees& degrees_cache() {
    if (cache_.ids) return cache_;
    std::vector<std::uint64_t> ids, deg;
    {
      nb::gil_scoped_release nogil;
      read_nogil([&](const auto& g) {
        sorted_degrees(s_->manager(), g, ids, deg);
        return 0;
      });
    }
    cache_.ids = std::make_shared<const std::vector<std::uint64_t>>(std::move(ids));
    cache_.degrees = std::make_shared<const std::vector<std::uint64_t>>(std::move(deg));
    return cache_;
  }

  // Every vertex and its out-degree, ids ascending. The banks are walked by kWalkers threads
  // at once, each under a fault guard of its own: a cold open reads the hash nodes from the
  // store, one page per fault, and faults of different threads are filled at the same time
  // (the store's device answers many reads in flight far faster than one after another),
  // then ordered by id (pheap::graph::order_by_vertex).
  static constexpr unsigned kWalkers = 16;
  template <class G>
  static void sorted_degrees(const pheap::manager& m, const G& g, std::vector<std::uint64_t>& ids,
                             std::vector<std::uint64_t>& deg) {
    using pairs = std::vector<std::pair<std::uint64_t, std::uint64_t>>;
    const std::size_t banks = g.num_banks();
    // Read-ahead by chunk: the hash nodes of every bank share a few allocator chunks, so the
    // first node met in a chunk asks the pager for the whole chunk (manager::prefetch: read in
    // the background, many pages in flight); the walkers then mostly find their pages filled.
    const auto base = reinterpret_cast<std::uintptr_t>(m.get_address());
    const std::uint64_t chunk = m.stats().chunk_size;
    const std::size_t chunks = m.get_size() / chunk + 1;
    std::unique_ptr<std::atomic<bool>[]> asked(new std::atomic<bool>[chunks]());
    auto ahead = [&](const void* p) {
      const std::size_t c = (reinterpret_cast<std::uintptr_t>(p) - base) / chunk;
      if (c >= chunks || asked[c].load(std::memory_order_relaxed) || asked[c].exchange(true)) return;
      const pheap::manager::memory_range r{reinterpret_cast<const void*>(base + c * chunk), chunk};
      m.prefetch(std::span<const pheap::manager::memory_range>(&r, 1));
    };
    const unsigned walkers = static_cast<unsigned>(std::min<std::size_t>(kWalkers, banks));
    std::vector<pairs> part(walkers);
    std::vector<std::exception_ptr> failed(walkers);
    std::vector<std::thread> threads;
    for (unsigned w = 0; w < walkers; ++w) {
      threads.emplace_back([&, w] {
        try {
          pheap::guard_faults([&] {
            for (std::size_t b = w; b < banks; b += walkers) {
              for (const auto& [u, l] : g.bank(b)) {
                ahead(&l);
                part[w].emplace_back(u, l.size());
              }
            }
          });
        } catch (...) {
          failed[w] = std::current_exception();
        }
      });
    }
    for (auto& t : threads) t.join();
    for (const auto& e : failed) {
      if (e) std::rethrow_exception(e);
    }
    pg::order_by_vertex(part, ids, deg);
  }

  store_ptr s_;
  std::string name_;
  bool directed_ = true;
  pg::weight_kind weights_ = pg::weight_kind::none;
  cached_degrees cache_;
};

// ---- add_edges ------------------------------------------------------------------------------

// Contiguous uint64 copy-free when possible; negative values of a signed input are refused.
nb::object as_ids(nb::handle a, const std::string& path, const char* what) {
  nb::module_ np = nb::module_::import_("numpy");
  nb::object arr = np.attr("asarray")(a);
  if (nb::cast<int>(arr.attr("ndim")) != 1) {
    throw py_error("invalid_argument", path, "add_edges", std::string(what) + " must be one-dimensional");
  }
  const std::string kind = nb::cast<std::string>(arr.attr("dtype").attr("kind"));
  if (kind != "u" && kind != "i") {
    throw py_error("invalid_argument", path, "add_edges",
                   std::string(what) + " must hold integers, not " + nb::cast<std::string>(arr.attr("dtype").attr("name")));
  }
  if (kind == "i" && nb::cast<std::size_t>(arr.attr("size")) > 0 && nb::cast<long long>(arr.attr("min")()) < 0) {
    throw py_error("invalid_argument", path, "add_edges", std::string(what) + " holds negative vertex ids");
  }
  return np.attr("ascontiguousarray")(arr, "dtype"_a = "uint64");
}

std::uint64_t fingerprint_of(std::span<const std::uint64_t> s, std::span<const std::uint64_t> d,
                             std::span<const std::uint64_t> w, pg::weight_kind wk, std::string& description) {
  const std::uint32_t cs = pheap::crc32c(s.data(), s.size_bytes());
  const std::uint32_t cd = pheap::crc32c(d.data(), d.size_bytes());
  const std::uint32_t cw = pheap::crc32c(w.data(), w.size_bytes());
  constexpr std::uint64_t kTag = 0x6e756d7079617272ULL;  // "numpyarr": never a file job's value
  std::uint64_t h = pg::mix64((static_cast<std::uint64_t>(cs) << 32) | cd);
  h ^= pg::mix64(s.size() ^ kTag);
  h ^= pg::mix64((static_cast<std::uint64_t>(cw) << 8) ^ static_cast<std::uint64_t>(wk));
  char b[160];
  std::snprintf(b, sizeof b, "NumPy arrays: %zu edges, crc32c src %08x dst %08x weights %08x", s.size(), cs, cd, cw);
  description = b;
  return h == 0 ? 1 : h;
}

nb::dict graph_handle::add_edges(nb::handle src, nb::handle dst, nb::handle weights, std::uint64_t flush_every,
                                 double flush_every_seconds, std::size_t batch_size, unsigned threads,
                                 bool reingest, bool abandon_incomplete) {
  const std::string& path = s_->path();
  nb::object s_arr = as_ids(src, path, "src"), d_arr = as_ids(dst, path, "dst");
  auto sv = nb::cast<nb::ndarray<const std::uint64_t, nb::ndim<1>, nb::c_contig>>(s_arr);
  auto dv = nb::cast<nb::ndarray<const std::uint64_t, nb::ndim<1>, nb::c_contig>>(d_arr);
  if (sv.size() != dv.size()) {
    throw py_error("invalid_argument", path, "add_edges",
                   "src has " + std::to_string(sv.size()) + " edges, dst " + std::to_string(dv.size()));
  }
  const std::size_t n = sv.size();
  std::vector<std::uint64_t> wbits;  // raw weight bits (edge::weight), one per edge
  if (weights_ == pg::weight_kind::none) {
    if (!weights.is_none()) {
      throw py_error("invalid_argument", path, "add_edges", "graph '" + name_ + "' is unweighted: pass no weights");
    }
  } else {
    if (weights.is_none()) {
      throw py_error("invalid_argument", path, "add_edges",
                     "graph '" + name_ + "' has weights '" + pg::to_string(weights_) + "': pass weights");
    }
    nb::module_ np = nb::module_::import_("numpy");
    nb::object w = np.attr("ascontiguousarray")(weights, "dtype"_a = weights_ == pg::weight_kind::f32 ? "float32" : "uint64");
    if (nb::cast<std::size_t>(w.attr("size")) != n) {
      throw py_error("invalid_argument", path, "add_edges", "weights has another length than src");
    }
    wbits.resize(n);
    if (weights_ == pg::weight_kind::f32) {
      auto fv = nb::cast<nb::ndarray<const float, nb::c_contig>>(w);
      for (std::size_t i = 0; i < n; ++i) wbits[i] = pg::f32_bits(fv.data()[i]);
    } else {
      auto uv = nb::cast<nb::ndarray<const std::uint64_t, nb::c_contig>>(w);
      std::copy(uv.data(), uv.data() + n, wbits.begin());
    }
  }
  if (batch_size == 0) throw py_error("invalid_argument", path, "add_edges", "batch_size must be >= 1");
  if (const long k = s_->exports(); k > 0) {
    throw nb::buffer_error(("pheap: add_edges " + path + ": " + std::to_string(k) +
                            " NumPy view(s) of this datastore are alive, and inserting moves lists; delete them first")
                               .c_str());
  }
  cache_ = {};  // vertices and degrees change

  pg::ingest_report rep;
  std::uint64_t added = 0;
  {
    nb::gil_scoped_release nogil;
    std::unique_lock<std::shared_mutex> l(s_->mu());
    pheap::manager& m = s_->writable("add_edges");
    pg::persistent_ingest_state* st = pg::find_ingest_state(m, name_);
    if (st == nullptr) {
      throw pheap::error(pheap::errc::corrupt, path, "add_edges", "graph '" + name_ + "' has no ingestion record");
    }
    const std::span<const std::uint64_t> ss(sv.data(), n), ds(dv.data(), n);
    pg::input_fingerprint fp;
    fp.value = fingerprint_of(ss, ds, wbits, weights_, fp.description);
    pg::ingest_options io;
    io.reingest = reingest;
    io.abandon_incomplete = abandon_incomplete;
    pg::grouped_insert_options gio;
    gio.threads = std::max(1u, threads);
    // The look-ahead of pheap-graph ingest (its default window, at most 1/8 of the buffer): it
    // asks the pager for the lists of the next banks and sorts them while the insertion works.
    std::uint64_t window = pg::grouped_insert_options::default_window;
    if (const std::uint64_t buffer = m.stats().pager.buffer_bytes; buffer != 0) window = std::min(window, buffer / 8);
    gio.prefetch = [&m](std::span<const std::pair<const void*, std::size_t>> r) { m.prefetch(r); };
    gio.prefetch_window_bytes = static_cast<std::size_t>(window);
    bool inserting = false;
    try {
      pg::visit_graph(m, name_, [&](auto& g) {
        pheap::guard_faults([&] {
          pg::detail::target_of<std::remove_cvref_t<decltype(g)>, pg::persistent_ingest_state> t(g, *st);
          pg::detail::job_counters c = t.load();
          if (!pg::detail::start_job(t, c, fp, io, rep)) return 0;  // done before: nothing to do
          std::uint64_t at = rep.resumed ? std::min<std::uint64_t>(c.byte_offset, n) : 0;
          std::uint64_t unflushed = 0;
          auto last_flush = std::chrono::steady_clock::now();
          std::vector<pg::edge> batch;
          batch.reserve(std::min<std::size_t>(batch_size, n));
          inserting = true;
          while (at < n) {
            const std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(batch_size, n - at));
            batch.clear();
            for (std::size_t i = 0; i < k; ++i) {
              batch.push_back({ss[at + i], ds[at + i], wbits.empty() ? 0 : wbits[at + i]});
            }
            t.insert(batch, gio);
            at += k;
            // The batch is in: the position moves past it (the only state write per batch).
            c.input_index = 0;
            c.byte_offset = at;
            c.line = 0;
            c.edges += k;
            c.total_edges += k;
            t.save(c);
            added += k;
            unflushed += k;
            const bool by_edges = flush_every != 0 && unflushed >= flush_every;
            const bool by_time = flush_every_seconds > 0 &&
                std::chrono::duration<double>(std::chrono::steady_clock::now() - last_flush).count() >= flush_every_seconds;
            if (by_edges || by_time) {
              rep.final.watermark = m.flush();
              ++rep.flushes;
              unflushed = 0;
              last_flush = std::chrono::steady_clock::now();
            }
          }
          pg::detail::end_job(t, c, fp, 1);
          pg::refresh_degree_index(m, name_, g);  // committed with the job's end (degree_index.hpp)
          rep.final.edges = c.edges;
          rep.final.watermark = m.flush();
          ++rep.flushes;
          return 0;
        });
      });
    } catch (...) {
      // Inside a batch the heap may be half-inserted: no watermark may take it.
      if (inserting) s_->abandon();
      throw;
    }
  }
  nb::dict d;
  d["already_done"] = rep.already_done;
  d["resumed"] = rep.resumed;
  d["resumed_at"] = rep.resumed_at_edges;
  d["added"] = added;
  d["edges"] = rep.already_done ? n : rep.final.edges;
  d["watermark"] = rep.already_done ? s_->manager().epoch() : rep.final.watermark;
  d["flushes"] = rep.flushes;
  return d;
}

}  // namespace

void register_graph(nb::module_& parent) {
  nb::module_ m = parent.def_submodule("graph", "Graphs made by pheap-graph ingest, from Python.");
  m.attr("UNREACHED") = pg::kUnreached;

  nb::class_<graph_handle>(m, "Graph",
      "A persistent graph (pheap/graph/store.hpp) of a datastore; a context manager.\n\n"
      "vertices()/degrees() are arrays aligned by vertex (ids ascending); neighbors(v) is a\n"
      "zero-copy view into the heap; bfs, components return arrays aligned with vertices().")
      .def_prop_ro("name", &graph_handle::name, "The graph's name in the datastore.")
      .def_prop_ro("path", &graph_handle::path, "The datastore's path.")
      .def_prop_ro("directed", &graph_handle::directed, "False: each edge is stored both ways.")
      .def_prop_ro("weights", &graph_handle::weights, "'none', 'u64' or 'f32'.")
      .def_prop_ro("read_only", &graph_handle::read_only, "Opened read-only.")
      .def_prop_ro("watermark", &graph_handle::watermark, "The datastore's last watermark (epoch).")
      .def_prop_ro("num_vertices", &graph_handle::num_vertices, "Vertices (keys of the adjacency).")
      .def_prop_ro("num_arcs", &graph_handle::num_arcs, "Stored adjacency entries (2 per undirected edge).")
      .def("vertices", &graph_handle::vertices,
           "Every vertex id, ascending (uint64, read-only). A view into the heap when the graph's\n"
           "degree index is current (the last ingestion job or add_edges wrote it and nothing was\n"
           "inserted since); else an array made by one walk of the graph.")
      .def("degrees", &graph_handle::degrees,
           "The out-degree of each vertex of vertices() (uint64, read-only; a view into the heap\n"
           "like vertices() when the degree index is current).")
      .def("neighbors", &graph_handle::neighbors, "v"_a,
           "v's adjacency as a read-only view into the heap (uint64 ids in stored order); for\n"
           "weighted graphs (dst, weight). KeyError if v is not a vertex.")
      .def("bfs", &graph_handle::bfs, "source"_a,
           "Breadth-first search: (level, parent) per vertex of vertices(); UNREACHED where not\n"
           "reached; the source is its own parent. The rows of `pheap-graph bfs --output`.")
      .def("components", &graph_handle::components,
           "(Weakly) connected components: per vertex of vertices(), the smallest id of its component.")
      .def("ingestion", &graph_handle::ingestion,
           "The ingestion record, as `pheap-graph stats --json` prints it (None if none).")
      .def("add_edges", &graph_handle::add_edges, "src"_a, "dst"_a, "weights"_a = nb::none(), nb::kw_only(),
           "flush_every"_a = 0, "flush_every_seconds"_a = 30.0, "batch_size"_a = std::size_t{1} << 20,
           "threads"_a = 1u, "reingest"_a = false, "abandon_incomplete"_a = false,
           "Inserts the edges src[i] -> dst[i] exactly once, as `pheap-graph ingest` does: a\n"
           "watermark every `flush_every` edges (0: by time only) or `flush_every_seconds`, and at\n"
           "the end; rerun with the same arrays after a crash, it resumes where the last watermark\n"
           "stopped. Arrays already added are not added again unless reingest=True. Returns a\n"
           "report dict (added, edges, resumed, resumed_at, already_done, watermark, flushes).")
      .def("refresh", &graph_handle::refresh,
           "Read-only graphs: moves to the datastore's newest watermark (the writer's last flush)\n"
           "without closing, and returns its epoch. Pages that did not change stay in memory.\n"
           "Refused (BufferError) while views of the datastore (neighbors(), a degree-index\n"
           "vertices()/degrees()) are alive. Counts, arrays and queries afterwards are the new\n"
           "watermark's.")
      .def("close", &graph_handle::close, "Flushes (read-write) and closes.")
      .def("__enter__", [](nb::handle self) { return nb::borrow(self); })
      .def("__exit__", [](graph_handle& g, nb::handle, nb::handle, nb::handle) { g.close(); },
           "exc_type"_a.none(), "exc"_a.none(), "tb"_a.none());

  m.def("open", [](const std::string& path, const std::string& name, bool read_only, std::optional<std::size_t> buffer_size) {
          store_ptr s;
          {
            nb::gil_scoped_release nogil;
            s = open_store(path, false, read_only, graph_options(buffer_size));
          }
          return graph_handle(std::move(s), name);
        }, "path"_a, "name"_a = "graph", "read_only"_a = true, "buffer_size"_a = nb::none(),
        "Opens the graph `name` of a datastore made by pheap-graph ingest (or graph.create).");
  m.def("create", [](const std::string& path, const std::string& name, bool directed, const std::string& weights,
                     std::size_t banks, std::optional<std::size_t> buffer_size) {
          const pg::weight_kind wk = pg::parse_weight_kind(weights);
          if (banks == 0) throw py_error("invalid_argument", path, "create graph " + name, "banks must be >= 1");
          store_ptr s;
          {
            nb::gil_scoped_release nogil;
            const pheap::options o = graph_options(buffer_size);
            pg::create_datastore(path, o, name, directed, wk, banks);
            s = open_store(path, false, false, o);
          }
          return graph_handle(std::move(s), name);
        }, "path"_a, "name"_a = "graph", "directed"_a = true, "weights"_a = "none", "banks"_a = std::size_t{1024},
        "buffer_size"_a = nb::none(),
        "Creates a datastore holding an empty graph (as pheap-graph ingest does) and opens it read-write.");
}

}  // namespace pyheap
