// pheap/graph/ingest.hpp — exactly-once, resumable ingestion of edge lists into a graph.
//
// The engine is independent of the heap: it works on any adjacency_list and ingest_state that
// live in the same durable heap, and makes progress durable through a caller-supplied `flush`
// callback (pheap: manager::flush(), which commits one atomic watermark).
//
// Exactly-once protocol. The state object records the position of the next unread edge
// (input index, byte offset, line; with an input_check, the checksum of the bytes before it)
// and is only ever updated at batch boundaries, after every edge of the batch has been
// inserted and while no insertion is running:
//     read batch -> insert batch (grouped, N threads) -> update state -> (every flush_every) flush()
// Hence every watermark holds edges and position of the same instant: a watermark with
// position P contains exactly the edges before P. After a crash the heap reopens at the last
// watermark, and rerunning the same command resumes at P — no edge lost, none duplicated.
// Consequences the caller must respect:
//   * flush() must not run while insert() calls are in flight (the engine guarantees this for
//     its own flushes; callers must not flush concurrently from elsewhere);
//   * if ingest() throws anything other than input_error / ingest_usage_error, a batch may be
//     partially inserted: the caller must NOT flush (or close the heap in a way that flushes)
//     afterwards; the last watermark is then still exact. input_error and ingest_usage_error
//     are thrown only when the heap is consistent (after a final flush for input_error).
//
// Job identity. A job is identified by a fingerprint of its inputs (absolute paths and sizes,
// in order) plus format and weight kind. Rerunning a finished job is a no-op ("already
// ingested"), unless `reingest` is set. A different job while one is unfinished is refused
// (finish it by rerunning it, or pass `abandon_incomplete` to keep what was committed and
// start the new job). STREAMS — "-" (stdin, allowed once per job), a named FIFO, a pipe such
// as bash's <(zcat x.gz), anything that is not a regular file (edge_io.hpp) — count by
// position, not by path (every stream is "-" in the fingerprint), are read once and never
// seeked, and a job with a stream is not recorded as finished (the next stream may hold
// other bytes).
//
// Changed inputs. Path and size do not say the bytes are the same: every watermark also holds
// the CRC32C of the bytes of the current input consumed so far (its input_check, below, saved
// with the position). A resume reads those bytes again from the input's start — a plain file,
// a compressed one, or a stream fed again from its start (skipping them is the only way past
// them in a pipe) — and compares: a difference, or an input that ends before the position, is
// refused with ingest_usage_error naming the input, before anything is inserted; the graph
// keeps the edges of the bytes as they were. So a resume costs a sequential read of the
// consumed part of the current input (about 1-2 s per GB of plain text; inputs before it are
// not read again). A CRC32C misses a change with probability about 2^-32. Without an
// input_check (ingest() without one, or a watermark written before pheap-graph recorded one:
// the record does not match the state's position) the bytes are read again but cannot be
// compared, the report says so (ingest_report::resume_unverified), and a stream job is then
// refused as before, since nothing says the new stream starts like the old one.
//
// The engine (graph/src/ingest.cpp) is not a template: it sees the graph and the state
// through detail::ingest_target, which ingest() below implements for any Graph and State.
// It keeps a copy of the state's counters and writes them all back (save) at the points the
// protocol names: job start or abandon, each batch boundary, each input boundary, job end.
//
// Insertion. Each batch is inserted grouped by source vertex (pheap/graph/grouped_insert.hpp):
// every vertex the batch names is looked up once per batch, the threads work on disjoint
// banks, and each list ends up with its arcs in input order — the graph is, entry for entry,
// what inserting the edges one at a time in input order makes, whatever `threads` and the batch
// size (so an interrupted and resumed ingestion equals an uninterrupted one list for list).
#pragma once

#include <pheap/graph/adjacency_list.hpp>
#include <pheap/graph/edge_io.hpp>
#include <pheap/graph/grouped_insert.hpp>

#include <boost/container/string.hpp>
#include <boost/container/vector.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace pheap::graph {

// Thrown when the command cannot run as given (job mismatch, stdin resume, missing input).
// Nothing was inserted when it is thrown.
class ingest_usage_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The persistent ingestion record. Lives in the same heap as the graph (named next to it).
// All fields are written only by the engine at batch boundaries (see protocol above).
template <class Alloc>
struct ingest_state {
  template <class T>
  using rebind = typename std::allocator_traits<Alloc>::template rebind_alloc<T>;
  using string_type = boost::container::basic_string<char, std::char_traits<char>, rebind<char>>;
  using fp_vector = boost::container::vector<std::uint64_t, rebind<std::uint64_t>>;

  explicit ingest_state(const Alloc& a) : description(a), completed(a) {}

  std::uint64_t fingerprint = 0;    // job identity (see above); 0 = no job yet
  std::uint64_t active = 0;         // 1 while the job identified by `fingerprint` is unfinished
  std::uint64_t from_stdin = 0;     // 1 when that job reads stdin
  std::uint64_t input_index = 0;    // input currently being read
  std::uint64_t byte_offset = 0;    // offset of the next unread line/record in that input
  std::uint64_t line = 0;           // lines consumed in that input (text)
  std::uint64_t edges = 0;          // edges ingested by the job so far
  std::uint64_t bad_lines = 0;      // lines skipped by the job so far
  std::uint64_t total_edges = 0;    // edges ingested by all jobs, ever
  std::uint64_t jobs_completed = 0;
  string_type description;          // human-readable inputs of the job, for messages
  fp_vector completed;              // fingerprints of finished (file) jobs
};

// The content check of an ingestion ("Changed inputs" above). A record of its own (graph
// datastores: N.ingest-check, next to N.ingest; pheap/graph/store.hpp) because ingest_state's
// layout is what existing datastores hold. The engine writes it with the state, at the same
// protocol points, so one watermark holds both; it applies only while its job and position
// equal the state's (a resume by a pheap-graph that did not know it leaves it behind).
struct input_check {
  static constexpr std::uint64_t kMagic = 0x4b434843504750ULL;  // "PGPCHCK"
  std::uint64_t magic = kMagic;
  std::uint64_t version = 1;
  std::uint64_t fingerprint = 0;  // of the job it belongs to; 0 = nothing recorded
  std::uint64_t input_index = 0;  // the position it belongs to
  std::uint64_t byte_offset = 0;
  std::uint64_t crc32c = 0;       // CRC32C of the decompressed bytes [0, byte_offset) of that input
};

struct ingest_options {
  input_format format = input_format::text;
  unsigned threads = 1;                        // inserting threads (>= 1)
  std::size_t batch_size = std::size_t{1} << 20;  // edges per batch (>= 1)
  std::uint64_t flush_every_edges = 0;         // 0 = no edge-count trigger
  double flush_every_seconds = 0;              // 0 = no time trigger
  bool skip_bad_lines = false;
  bool reingest = false;
  bool abandon_incomplete = false;
  std::size_t read_buffer_bytes = std::size_t{1} << 20;
  // Ingestion prefetch (empty: none). While the threads insert a batch bank by bank, a
  // look-ahead thread looks up the lists of the banks after theirs and passes the parts the
  // insertion will touch here — pheap: [&m](auto r) { m.prefetch(r); } (manager::prefetch,
  // which returns at once) — so the store reads them many at a time before they are needed.
  // It runs at most prefetch_window_bytes ahead (grouped_insert.hpp, "The window": the default
  // 4 MiB suits budgets of tens of MiB and up; keep it well below the pager's buffer). In
  // core it pays too on two cores: it sorts the next banks while the insertion works. The
  // look-ahead's reads of the heap happen on its own thread, under a pheap::guard_faults of
  // its own: a damaged page there is the store's error, thrown from ingest
  // (grouped_insert.hpp, "Errors").
  prefetch_fn prefetch;
  std::size_t prefetch_window_bytes = grouped_insert_options::default_window;
  // Called once at the end of a job that ran (not for one already done), after the job is
  // recorded finished and before the job's last flush, with no insertion running: what it
  // writes to the heap is committed by the watermark that ends the job (pheap-graph and the
  // Python package: the degree index, pheap/graph/degree_index.hpp). A throw from it is a throw
  // from ingest() (the caller must not flush); the job's end is then not committed and a
  // rerun finishes it again.
  std::function<void()> on_finish;
};

// The most DRAM an ingestion of `inputs` takes beside the heap while it runs: two batches of
// edges (one inserted while the next is parsed), the insertion's grouping of a batch by bank
// (two 4-byte references per edge), the read buffer and the prefetch's slices. A batch holds
// at most what the inputs can hold when their decoded sizes are known (a text edge takes at
// least 4 bytes, a binary one 16). For a pager that follows a memory limit this is the
// memory_headroom to open with (pheap/pager_options.hpp): its buffer fills within a few faults
// at large pages, before the first batch is parsed, and the batches would then be over the
// limit before the pager gave memory back (pheap-graph ingest of SCALE 18 at 2 MiB pages was
// OOM-killed within 1.5 s in every run in cgroups of 96 to 192 MiB with the default headroom).
std::uint64_t ingest_memory(const std::vector<std::string>& inputs, const ingest_options& opt);

struct ingest_progress {
  std::uint64_t edges = 0;        // edges of this job (including those from a resumed prefix)
  std::uint64_t edges_this_run = 0;
  std::uint64_t bytes_this_run = 0;
  std::uint64_t bad_lines = 0;
  std::uint64_t watermark = 0;    // last value returned by flush (0 before the first)
  std::size_t input_index = 0;
  std::size_t inputs = 0;
  double seconds = 0;             // since ingest() started
};

struct ingest_report {
  bool already_done = false;      // finished job rerun: nothing inserted
  bool resumed = false;           // continued an unfinished job
  std::uint64_t resumed_at_edges = 0;
  std::size_t resumed_input = 0;
  std::uint64_t resumed_offset = 0;
  bool resume_unverified = false;  // resumed without a checksum to compare ("Changed inputs")
  ingest_progress final;          // totals at the end
  std::uint64_t flushes = 0;
};

struct input_fingerprint {
  std::uint64_t value = 0;
  std::string description;
  bool has_stdin = false;  // a stream among the inputs (stdin, a FIFO, a pipe: "Job identity")
};

// Fingerprint of an input list (see "Job identity"). Throws ingest_usage_error when a file
// cannot be stat'ed, is a directory, or "-" appears twice.
input_fingerprint fingerprint_inputs(const std::vector<std::string>& inputs, input_format format,
                                     weight_kind weights);

// The plan of per-edge insertion, made for a whole batch before it is inserted: the heap
// ranges that inserting `edges` into `g` one at a time will touch and that can be known before
// the insertion without changing anything (the benchmarks' per-edge prefetch baseline;
// graph::ingest inserts grouped and plans with the look-ahead of grouped_insert.hpp instead).
// For every distinct endpoint already in the graph (the source; also the destination of an
// undirected graph), looked up once per slice of 32 Ki edges, in vertex order: the slot its
// next push_back writes, or the whole list when it is full (push_back then copies it into a
// new allocation). Its DRAM: 16 bytes per range plus 512 KiB. Not known before the insertion,
// so not in the plan: the vertex table's buckets and nodes (the look-up reads them: they fault
// here, one at a time), where a new vertex or a grown list will be allocated, the bank
// counters. Reads the graph: no insert may run meanwhile. Graph: directed(), neighbors(u) ->
// const list_type* (adjacency_list).
template <class Graph>
std::vector<std::pair<const void*, std::size_t>> prefetch_ranges(const Graph& g,
                                                                 std::span<const edge> edges) {
  // Slices of 32 Ki edges: the sorted ids of one slice take 512 KiB of DRAM whatever the
  // batch (a whole 2^20-edge batch took 16 MiB, out of the same memory limit as the buffer);
  // a vertex in several slices is listed once per slice (manager::prefetch merges pages).
  constexpr std::size_t kSlice = std::size_t{1} << 15;
  using neighbor = typename Graph::neighbor_type;
  std::vector<std::pair<const void*, std::size_t>> out;
  std::vector<std::uint64_t> ids;
  ids.reserve(std::min(edges.size(), kSlice) * 2);
  for (std::size_t at = 0; at < edges.size(); at += kSlice) {
    ids.clear();
    for (const edge& e : edges.subspan(at, std::min(kSlice, edges.size() - at))) {
      ids.push_back(e.src);
      if (!g.directed()) ids.push_back(e.dst);
    }
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    for (const std::uint64_t u : ids) {
      const auto* l = g.neighbors(u);
      if (l == nullptr || l->capacity() == 0) continue;
      const neighbor* data = &*l->data();
      if (l->size() < l->capacity()) {
        out.emplace_back(data + l->size(), sizeof(neighbor));
      } else {
        out.emplace_back(data, l->size() * sizeof(neighbor));
      }
    }
  }
  return out;
}

namespace detail {

// The fields of ingest_state whose types do not depend on the allocator.
// Plus the input_check's checksum, known when the record matches the position.
struct job_counters {
  std::uint64_t fingerprint = 0, active = 0, from_stdin = 0, input_index = 0, byte_offset = 0,
                line = 0, edges = 0, bad_lines = 0, total_edges = 0, jobs_completed = 0;
  std::uint32_t consumed_crc = 0;  // CRC32C of [0, byte_offset) of input input_index
  bool crc_known = false;
};

// What the engine needs of a graph and its ingest_state.
class ingest_target {
 public:
  virtual weight_kind weights() const = 0;
  // Inserts `edges` grouped (grouped_insert.hpp); no other thread touches the graph meanwhile.
  virtual void insert(std::span<const edge> edges, const grouped_insert_options& o) = 0;
  virtual job_counters load() const = 0;
  virtual void save(const job_counters& c) = 0;  // writes every counter into the state
  virtual std::string description() const = 0;
  virtual void set_description(const std::string& d) = 0;
  virtual bool completed(std::uint64_t fingerprint) const = 0;  // a finished file job?
  virtual void add_completed(std::uint64_t fingerprint) = 0;

 protected:
  ~ingest_target() = default;
};

// The job step of the engine, shared with the distributed one (pheap/graph/mpi/ingest.hpp):
// an unfinished job in `c` is resumed (rep.resumed and where), abandoned (kept edges, then a
// new job) or refused (ingest_usage_error: other inputs, or stdin); a finished file job is
// nothing to do (rep.already_done, returns false) unless opt.reingest; otherwise a new job is
// recorded in `c` and saved (position: input 0, offset 0). True when there is work to do.
bool start_job(ingest_target& t, job_counters& c, const input_fingerprint& fp, const ingest_options& opt,
               ingest_report& rep);

// The job is done (every input read): marks it finished in `c` and saves it; a file job's
// fingerprint joins the completed ones. The caller flushes.
void end_job(ingest_target& t, job_counters& c, const input_fingerprint& fp, std::size_t inputs);

// The refusal of a resume whose input `input` (0-based) changed since its watermark: `what` is
// the reader's input_changed text (and where), `edges` what the job committed, when known.
// Shared with the distributed engine.
ingest_usage_error changed_input_error(std::size_t input, const std::string& what,
                                       std::optional<std::uint64_t> edges);

// The engine: graph/src/ingest.cpp.
ingest_report run_ingest(ingest_target& target, const std::vector<std::string>& inputs,
                         const ingest_options& opt, const std::function<std::uint64_t()>& flush,
                         const std::function<void(const ingest_progress&)>& progress);

template <class Graph, class State>
class target_of final : public ingest_target {
 public:
  target_of(Graph& g, State& st, input_check* check = nullptr) : g_(g), st_(st), check_(check) {}
  weight_kind weights() const override { return Graph::kind; }
  void insert(std::span<const edge> edges, const grouped_insert_options& o) override {
    inserter_.insert(g_, edges, o);
  }
  job_counters load() const override {
    job_counters c{st_.fingerprint, st_.active, st_.from_stdin, st_.input_index, st_.byte_offset,
                   st_.line,        st_.edges,  st_.bad_lines,  st_.total_edges, st_.jobs_completed};
    const input_check* k = check_;
    if (k != nullptr && k->magic == input_check::kMagic && k->fingerprint != 0 &&
        k->fingerprint == c.fingerprint && k->input_index == c.input_index &&
        k->byte_offset == c.byte_offset) {
      c.consumed_crc = static_cast<std::uint32_t>(k->crc32c);
      c.crc_known = true;
    }
    return c;
  }
  void save(const job_counters& c) override {
    if (check_ != nullptr) {
      check_->magic = input_check::kMagic;
      check_->fingerprint = c.crc_known ? c.fingerprint : 0;
      check_->input_index = c.input_index;
      check_->byte_offset = c.byte_offset;
      check_->crc32c = c.consumed_crc;
    }
    st_.fingerprint = c.fingerprint;
    st_.active = c.active;
    st_.from_stdin = c.from_stdin;
    st_.input_index = c.input_index;
    st_.byte_offset = c.byte_offset;
    st_.line = c.line;
    st_.edges = c.edges;
    st_.bad_lines = c.bad_lines;
    st_.total_edges = c.total_edges;
    st_.jobs_completed = c.jobs_completed;
  }
  std::string description() const override { return st_.description.c_str(); }
  void set_description(const std::string& d) override { st_.description.assign(d.c_str()); }
  bool completed(std::uint64_t fp) const override {
    return std::find(st_.completed.begin(), st_.completed.end(), fp) != st_.completed.end();
  }
  void add_completed(std::uint64_t fp) override { st_.completed.push_back(fp); }

 private:
  Graph& g_;
  State& st_;
  input_check* check_;
  grouped_inserter inserter_;  // its DRAM serves batch after batch
};

}  // namespace detail

// Runs (or resumes) the job `inputs` into `g`, recording progress in `st`. `flush` makes all
// heap writes so far durable atomically and returns the watermark; `progress` (may be empty) is
// called after every batch. See the protocol and error contract at the top of this file.
// Graph: static kind and the requirements of grouped_insert.hpp (adjacency_list meets them).
template <class Graph, class State>
ingest_report ingest(Graph& g, State& st, const std::vector<std::string>& inputs,
                     const ingest_options& opt, const std::function<std::uint64_t()>& flush,
                     const std::function<void(const ingest_progress&)>& progress = {}) {
  detail::target_of<Graph, State> target(g, st);
  return detail::run_ingest(target, inputs, opt, flush, progress);
}

// The same, recording the checksum of the consumed bytes in `check` (in the same heap as `st`)
// and verifying it at resume ("Changed inputs" above).
template <class Graph, class State>
ingest_report ingest(Graph& g, State& st, input_check& check, const std::vector<std::string>& inputs,
                     const ingest_options& opt, const std::function<std::uint64_t()>& flush,
                     const std::function<void(const ingest_progress&)>& progress = {}) {
  detail::target_of<Graph, State> target(g, st, &check);
  return detail::run_ingest(target, inputs, opt, flush, progress);
}

}  // namespace pheap::graph
