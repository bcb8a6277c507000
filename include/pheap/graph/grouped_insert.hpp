// pheap/graph/grouped_insert.hpp — a batch of edges inserted grouped by source vertex, bank by
// bank, with an optional look-ahead that asks the store for the lists before they are grown.
//
// Why. Inserted one by one in input order, a batch of random edges touches a vertex's hash node
// and list once per arc: with 2^20 R-MAT edges about 8 times per vertex and batch, each time
// somewhere else in the heap. Out of core every such touch is a page fault. Grouped, a batch
// touches each of its vertices once, and the order of the touches is known before they happen.
//
// What grouped_inserter::insert(g, edges) does:
//   1. Entries: an edge (src, dst) gives the arc src -> dst and, when src != dst, an entry keyed
//      by dst: the arc dst -> src (undirected) or "dst is a vertex" (directed, ensure_vertex).
//      A self-loop gives one arc, as adjacency_list::insert stores it once. (With `halves`, for
//      a graph partitioned by vertex, an edge gives only the entries its half mask names.)
//   2. A counting sort of the entries by the bank of their key (stable, the threads counting
//      and scattering disjoint parts of the batch); then, bank by bank, a sort by (key, input
//      position): one group per vertex, its arcs in input order.
//   3. The threads claim banks one at a time, in bank order; a bank is inserted by exactly one
//      thread (no two threads ever write the same bank, so no lock per edge), each group with
//      one adjacency_list::add_arcs: one look-up, at most one reallocation. With `locks`, lock
//      b is taken once for the whole of bank b.
//   4. With a prefetch callback, a look-ahead thread walks the banks ahead of the inserting
//      threads: it sorts a bank (step 2), looks its vertices up, hands the callback the parts of
//      their lists the insertion will touch (below), and releases the bank to the inserters. It
//      stays at most `prefetch_window_bytes` ahead of them (with 0: one bank); when they
//      overtake it, it goes on from the next bank they will claim. An inserting thread waits
//      for it only when it claims the very bank being looked up at that moment.
//
// Contract (result). After insert, every list holds exactly what adjacency_list::insert of the
// same edges one at a time, in input order, on one thread, would have stored — entry for entry
// and in the same order, weights and duplicate edges included — whatever the thread count and
// however a stream is cut into batches; vertices, num_arcs() and the banks' arc counters are
// the same. Only list capacities differ (add_arcs's growth rule). So everything that reads the
// graph gives the same output: export (neighbours in stored order), BFS levels and parents, CC,
// stats. (Per-edge insertion on N > 1 threads leaves the order within a list to the threads'
// interleaving; no reader relies on that order.)
//
// Concurrency. Without `locks`, nothing else may read or write g during the call. With `locks`
// (the graph's bank_locks), the call keeps adjacency_list's contract — bank b is read by the
// look-ahead and written by the inserting threads under lock b only — and may run beside other
// writers sharing the table. Caveat: only the calling thread is the caller's; the other
// inserting threads write the heap outside it, so pheap::guard_faults around the call covers
// the calling thread only: with threads > 1 a damaged page met by another inserting thread is
// SIGBUS. The look-ahead thread guards its own reads (a damaged page there is the store's
// error, "Errors"), so threads = 1, with or without a prefetch callback, inserts and looks up
// under guards only when the caller guards the call.
//
// Errors. The first exception of any thread (an allocation failure, the callback's, a damaged
// page met by the look-ahead's look-ups) stops every thread at its next bank and is rethrown
// once all have stopped. The batch is then partly inserted (whole groups): graph::ingest's
// protocol forbids a flush after such a throw.
//
// The prefetch plan. For each vertex of a bank that is in g already and has an allocation: the
// slots its appends will write, [data + size, data + size + k), when they fit in the capacity;
// else the whole list [data, data + size), which the reallocation reads to copy it. The
// look-up itself reads the vertex's hash node, faulting it in on the look-ahead thread while the
// inserting threads work. Not in the plan (unknowable before the insertion): a new vertex's node
// and list, where a grown list will be allocated. The callback is called once per bank with a
// non-empty plan, from the look-ahead thread; pheap: [&m](auto r) { m.prefetch(r); }
// (manager::prefetch: the pager's asynchronous prefetch queue, or MADV_WILLNEED on the mmap
// backend).
//
// The window. Counted per looked-up vertex as 4 KiB for its node plus its range rounded out to
// whole 4 KiB pages (the page size of graph datastores; with larger pages the window covers
// proportionally more memory). Pages read ahead and evicted before their use were read for
// nothing, so the window must stay well below the pager's buffer; the callback's owner rarely
// knows the buffer, hence the default: 4 MiB (about 1 000 pages), a small part of any budget for
// which out-of-core ingestion is meant (tens of MiB and up) and still enough to keep a device
// busy dozens of reads deep. A smaller budget wants a smaller window.
//
// DRAM, kept by the grouped_inserter from batch to batch: 4 bytes per entry (8 MiB for 2^20
// edges without self-loops), 8 bytes per bank and thread; per call, per thread and for the
// look-ahead, 16 bytes per entry of the largest bank and the neighbours of the largest group. A
// batch of more than 2^30 edges is grouped 2^30 edges at a time.
//
// Graph requirements (adjacency_list meets them): neighbor_type, static make_neighbor(v, bits),
// directed(), num_banks(), bank_of(u), add_arcs(u, std::span<const neighbor_type>, bank_locks*);
// for the prefetch plan neighbors(u) -> const list* (size(), capacity(), data()) — a graph
// without it gets no plan.
#pragma once

#include <pheap/fault_guard.hpp>
#include <pheap/graph/adjacency_list.hpp>
#include <pheap/graph/types.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

namespace pheap::graph {

// What a prefetch callback receives: heap ranges (address, length in bytes).
using prefetch_fn = std::function<void(std::span<const std::pair<const void*, std::size_t>>)>;

struct grouped_insert_options {
  static constexpr std::size_t default_window = std::size_t{4} << 20;
  unsigned threads = 1;  // inserting threads (0 counts as 1)
  prefetch_fn prefetch;  // empty: no look-ahead thread, no plan
  std::size_t prefetch_window_bytes = default_window;  // how far the look-ahead runs ahead (above)
  // Progress within a batch (may be null): advanced by the arcs of each bank once inserted.
  std::atomic<std::uint64_t>* arcs_inserted = nullptr;
};

namespace detail {

// One batch's per-bank work, as the scheduler (graph/src/grouped_insert.cpp) drives it. `slot`
// names the calling worker's scratch: 0 .. threads-1 for the inserting threads, `threads` for
// the look-ahead.
class bank_work {
 public:
  virtual void prepare(std::size_t bank, unsigned slot) = 0;         // step 2: sort into groups
  virtual std::size_t plan(std::size_t bank, unsigned slot) = 0;     // step 4: window bytes
  virtual std::uint64_t insert(std::size_t bank, unsigned slot) = 0;  // step 3: arcs added

 protected:
  ~bank_work() = default;
};

// Steps 3 and 4: `threads` inserting workers (the first on the calling thread) claim the banks
// [0, banks) in order; with `look_ahead` a further thread prepares and plans banks ahead of
// them within `window` bytes. Every bank is prepared once and inserted once. Rethrows the first
// error once every thread has stopped.
void run_banks(bank_work& w, std::size_t banks, unsigned threads, bool look_ahead, std::size_t window,
               std::atomic<std::uint64_t>* arcs_inserted);

// Runs f(0) .. f(n-1) on n threads, f(0) on the calling thread; rethrows the first error once
// all have returned.
void run_parallel(unsigned n, const std::function<void(unsigned)>& f);

// Bytes of the 4 KiB pages that [p, p + n) spans (0 for n == 0).
inline std::size_t page_span(const void* p, std::size_t n) noexcept {
  if (n == 0) return 0;
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  return ((a + n - 1) / 4096 - a / 4096 + 1) * 4096;
}

}  // namespace detail

// The DRAM of grouped insertion, kept from one batch to the next (see the DRAM paragraph above).
// One inserter serves one insert call at a time.
class grouped_inserter {
 public:
  // Inserts `edges` into g as described at the top of this file.
  template <class Graph>
  void insert(Graph& g, std::span<const edge> edges, const grouped_insert_options& opt = {},
              bank_locks* locks = nullptr) {
    insert(g, edges, std::span<const std::uint8_t>(), opt, locks);
  }

  // Halves of edges, for a graph partitioned by vertex (pheap/graph/mpi: a rank stores the
  // entries of the vertices it owns). halves[i] says which entries of edges[i] to make:
  // src_half, the arc src -> dst (adjacency_list::add_arc(src, dst)); dst_half, the entry keyed
  // by dst (undirected: add_arc(dst, src); directed: ensure_vertex(dst)); both, what insert(e)
  // makes (a self-loop's dst half then adds nothing). The result is what those calls, edge by
  // edge in input order, would have stored (the contract above). An empty `halves`: both
  // halves of every edge, i.e. insert(g, edges).
  static constexpr std::uint8_t src_half = 1, dst_half = 2;
  template <class Graph>
  void insert(Graph& g, std::span<const edge> edges, std::span<const std::uint8_t> halves,
              const grouped_insert_options& opt = {}, bank_locks* locks = nullptr) {
    constexpr std::size_t kChunk = std::size_t{1} << 30;  // entry refs are 32-bit
    for (std::size_t at = 0; at < edges.size(); at += kChunk) {
      const std::size_t n = std::min(kChunk, edges.size() - at);
      insert_chunk(g, edges.subspan(at, n), halves.empty() ? halves : halves.subspan(at, n), opt, locks);
    }
  }

 private:
  template <class Graph>
  class batch;

  // Steps 1-2a: refs_ holds the batch's entries, (edge index << 1) | (keyed by dst), grouped by
  // bank in input order; begin_[b] .. begin_[b + 1] is bank b's. Returns the thread count used.
  // The entries edge i makes (above): bit 0 the src-keyed one, bit 1 the dst-keyed one.
  static unsigned entries_of(const edge& e, std::span<const std::uint8_t> halves, std::size_t i) noexcept {
    const unsigned h = halves.empty() ? src_half | dst_half : halves[i];
    return (h & src_half) | ((h & dst_half) != 0 && (e.dst != e.src || (h & src_half) == 0) ? 2u : 0u);
  }

  template <class Graph>
  unsigned sort_by_bank(const Graph& g, std::span<const edge> edges, std::span<const std::uint8_t> halves,
                        unsigned threads) {
    const std::size_t nb = g.num_banks();
    threads = static_cast<unsigned>(std::clamp<std::size_t>(edges.size(), 1, std::max(1u, threads)));
    counts_.assign(static_cast<std::size_t>(threads) * nb, 0);
    auto part = [&](unsigned t) {
      return std::pair(edges.size() * t / threads, edges.size() * (t + 1) / threads);
    };
    detail::run_parallel(threads, [&](unsigned t) {
      std::size_t* c = counts_.data() + t * nb;
      const auto [lo, hi] = part(t);
      for (std::size_t i = lo; i < hi; ++i) {
        const unsigned k = entries_of(edges[i], halves, i);
        if (k & 1) ++c[g.bank_of(edges[i].src)];
        if (k & 2) ++c[g.bank_of(edges[i].dst)];
      }
    });
    begin_.assign(nb + 1, 0);
    std::size_t total = 0;
    for (std::size_t b = 0; b < nb; ++b) {
      begin_[b] = total;
      for (unsigned t = 0; t < threads; ++t) total += std::exchange(counts_[t * nb + b], total);
    }
    begin_[nb] = total;
    // At most two entries per edge, reserved at once: a later, larger batch never reallocates
    // (a copy of the whole array in one go, which a pager following a memory limit sees as a
    // burst of the process's memory; memory_limit.hpp).
    if (refs_.capacity() < 2 * edges.size()) refs_.reserve(2 * edges.size());
    refs_.resize(total);
    detail::run_parallel(threads, [&](unsigned t) {
      std::size_t* c = counts_.data() + t * nb;
      const auto [lo, hi] = part(t);
      for (std::size_t i = lo; i < hi; ++i) {
        const unsigned k = entries_of(edges[i], halves, i);
        if (k & 1) refs_[c[g.bank_of(edges[i].src)]++] = static_cast<std::uint32_t>(i << 1);
        if (k & 2) refs_[c[g.bank_of(edges[i].dst)]++] = static_cast<std::uint32_t>(i << 1 | 1);
      }
    });
    return threads;
  }

  template <class Graph>
  void insert_chunk(Graph& g, std::span<const edge> edges, std::span<const std::uint8_t> halves,
                    const grouped_insert_options& opt, bank_locks* locks);

  std::vector<std::uint32_t> refs_;
  std::vector<std::size_t> begin_;
  std::vector<std::size_t> counts_;
};

// Steps 2b-4 for one chunk of at most 2^30 edges: the bank_work of the scheduler.
template <class Graph>
class grouped_inserter::batch final : public detail::bank_work {
 public:
  using neighbor = typename Graph::neighbor_type;
  static constexpr bool can_plan = requires(const Graph& cg) { cg.neighbors(std::uint64_t{0}); };

  batch(Graph& g, std::span<const edge> edges, const grouped_insert_options& opt, bank_locks* locks,
        std::vector<std::uint32_t>& refs, const std::vector<std::size_t>& begin, unsigned slots)
      : g_(g), edges_(edges), opt_(opt), locks_(locks), refs_(refs), begin_(begin), scratch_(slots) {}

  void prepare(std::size_t b, unsigned slot) override {
    auto& keyed = scratch_[slot].keyed;
    keyed.clear();
    for (std::size_t i = begin_[b]; i < begin_[b + 1]; ++i) keyed.push_back({key_of(refs_[i]), refs_[i]});
    std::sort(keyed.begin(), keyed.end());  // by key, then input position: stable
    for (std::size_t i = begin_[b]; i < begin_[b + 1]; ++i) refs_[i] = keyed[i - begin_[b]].ref;
  }

  std::size_t plan(std::size_t b, unsigned slot) override {
    if constexpr (can_plan) {
      auto& ranges = scratch_[slot].ranges;
      ranges.clear();
      std::size_t bytes = 0;
      {
        const auto held = lock(b);
        // The look-ups run on the look-ahead thread, outside any guard of the caller: guarded
        // here, a damaged page they meet is the store's pheap::error, which stops the batch
        // ("Errors"), instead of a SIGBUS that ends the process. The guard leaves by siglongjmp
        // (pheap/fault_guard.hpp): nothing inside it owns anything (the lock is held outside;
        // `ranges` is whole between two push_backs, and a fault happens only in a look-up).
        pheap::guard_faults([&] {
          for_each_group(b, [&](std::uint64_t u, std::size_t first, std::size_t last) {
            bytes += 4096;  // the look-up's node
            const std::size_t k = arcs_in(first, last);
            const auto* l = g_.neighbors(u);
            if (l == nullptr || k == 0 || l->capacity() == 0) return;
            const neighbor* data = &*l->data();
            const auto r = l->size() + k <= l->capacity()
                               ? std::pair<const void*, std::size_t>(data + l->size(), k * sizeof(neighbor))
                               : std::pair<const void*, std::size_t>(data, l->size() * sizeof(neighbor));
            if (r.second == 0) return;
            ranges.push_back(r);
            bytes += detail::page_span(r.first, r.second);
          });
        });
      }
      if (!ranges.empty()) opt_.prefetch(ranges);
      return bytes;
    } else {
      (void)b, (void)slot;
      return 0;
    }
  }

  std::uint64_t insert(std::size_t b, unsigned slot) override {
    auto& arcs = scratch_[slot].arcs;
    std::uint64_t n = 0;
    const auto held = lock(b);
    for_each_group(b, [&](std::uint64_t u, std::size_t first, std::size_t last) {
      arcs.clear();
      for (std::size_t i = first; i < last; ++i) {
        const edge& e = edges_[refs_[i] >> 1];
        if ((refs_[i] & 1) == 0) {
          arcs.push_back(Graph::make_neighbor(e.dst, e.weight));
        } else if (!g_.directed()) {
          arcs.push_back(Graph::make_neighbor(e.src, e.weight));
        }
      }
      g_.add_arcs(u, std::span<const neighbor>(arcs), nullptr);
      n += arcs.size();
    });
    return n;
  }

 private:
  struct keyed_ref {
    std::uint64_t key;
    std::uint32_t ref;
    friend bool operator<(const keyed_ref& a, const keyed_ref& b) noexcept {
      return a.key != b.key ? a.key < b.key : a.ref < b.ref;
    }
  };
  struct scratch {
    std::vector<keyed_ref> keyed;
    std::vector<neighbor> arcs;
    std::vector<std::pair<const void*, std::size_t>> ranges;
  };

  std::uint64_t key_of(std::uint32_t ref) const noexcept {
    const edge& e = edges_[ref >> 1];
    return (ref & 1) != 0 ? e.dst : e.src;
  }
  // Arcs among the entries [first, last) of one group (a directed graph's dst entries add none).
  std::size_t arcs_in(std::size_t first, std::size_t last) const noexcept {
    if (!g_.directed()) return last - first;
    std::size_t k = 0;
    for (std::size_t i = first; i < last; ++i) k += (refs_[i] & 1) == 0 ? 1 : 0;
    return k;
  }
  // f(vertex, first, last) for each group of prepared bank b.
  template <class F>
  void for_each_group(std::size_t b, F&& f) const {
    for (std::size_t i = begin_[b], end = begin_[b + 1]; i < end;) {
      const std::uint64_t u = key_of(refs_[i]);
      std::size_t j = i + 1;
      while (j < end && key_of(refs_[j]) == u) ++j;
      f(u, i, j);
      i = j;
    }
  }
  std::unique_lock<std::mutex> lock(std::size_t b) const {
    return locks_ != nullptr ? std::unique_lock<std::mutex>((*locks_)[b]) : std::unique_lock<std::mutex>();
  }

  Graph& g_;
  std::span<const edge> edges_;
  const grouped_insert_options& opt_;
  bank_locks* locks_;
  std::vector<std::uint32_t>& refs_;
  const std::vector<std::size_t>& begin_;
  std::vector<scratch> scratch_;
};

template <class Graph>
void grouped_inserter::insert_chunk(Graph& g, std::span<const edge> edges, std::span<const std::uint8_t> halves,
                                    const grouped_insert_options& opt, bank_locks* locks) {
  if (edges.empty()) return;
  const unsigned threads = sort_by_bank(g, edges, halves, opt.threads);
  const bool look_ahead = batch<Graph>::can_plan && static_cast<bool>(opt.prefetch);
  batch<Graph> work(g, edges, opt, locks, refs_, begin_, threads + 1);
  detail::run_banks(work, g.num_banks(), threads, look_ahead, opt.prefetch_window_bytes, opt.arcs_inserted);
}

// insert with a grouped_inserter of its own (its DRAM freed on return).
template <class Graph>
void insert_grouped(Graph& g, std::span<const edge> edges, const grouped_insert_options& opt = {},
                    bank_locks* locks = nullptr) {
  grouped_inserter().insert(g, edges, opt, locks);
}

}  // namespace pheap::graph
