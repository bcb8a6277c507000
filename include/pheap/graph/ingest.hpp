// pheap/graph/ingest.hpp — exactly-once, resumable ingestion of edge lists into a graph.
//
// The engine is independent of the heap: it works on any adjacency_list and ingest_state that
// live in the same durable heap, and makes progress durable through a caller-supplied `flush`
// callback (pheap: manager::flush(), which commits one atomic watermark).
//
// Exactly-once protocol. The state object records the position of the next unread edge
// (input index, byte offset, line) and is only ever updated at batch boundaries, after every
// edge of the batch has been inserted and while no insertion is running:
//     read batch -> insert batch (N threads) -> update state -> (every flush_every) flush()
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
// start the new job). Input "-" (stdin) is allowed once per job; a stdin job cannot be resumed
// (rerun is refused with a message; `abandon_incomplete` keeps the committed prefix) and is
// not recorded as finished (stdin content may differ between runs).
#pragma once

#include <pheap/graph/adjacency_list.hpp>
#include <pheap/graph/edge_io.hpp>

#include <boost/container/string.hpp>
#include <boost/container/vector.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
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
};

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
  ingest_progress final;          // totals at the end
  std::uint64_t flushes = 0;
};

struct input_fingerprint {
  std::uint64_t value = 0;
  std::string description;
  bool has_stdin = false;
};

// Fingerprint of an input list (see "Job identity"). Throws ingest_usage_error when a file
// cannot be stat'ed or "-" appears twice.
inline input_fingerprint fingerprint_inputs(const std::vector<std::string>& inputs,
                                            input_format format, weight_kind weights) {
  input_fingerprint f;
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64
  auto mixin = [&h](const void* p, std::size_t n) {
    const auto* c = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) {
      h ^= c[i];
      h *= 0x100000001b3ULL;
    }
  };
  const std::uint32_t fmt = static_cast<std::uint32_t>(format);
  const std::uint32_t wk = static_cast<std::uint32_t>(weights);
  mixin(&fmt, sizeof fmt);
  mixin(&wk, sizeof wk);
  for (const auto& in : inputs) {
    std::string name;
    std::uint64_t size = 0;
    if (in == "-") {
      if (f.has_stdin) throw ingest_usage_error("stdin ('-') can be given only once");
      f.has_stdin = true;
      name = "-";
    } else {
      struct stat st {};
      if (::stat(in.c_str(), &st) != 0) {
        throw ingest_usage_error("cannot stat input " + in + ": " + std::strerror(errno));
      }
      if (S_ISDIR(st.st_mode)) throw ingest_usage_error("input " + in + " is a directory");
      name = std::filesystem::absolute(in).lexically_normal().string();
      size = static_cast<std::uint64_t>(st.st_size);
    }
    mixin(name.data(), name.size() + 1);
    mixin(&size, sizeof size);
    if (!f.description.empty()) f.description += ", ";
    f.description += name == "-" ? std::string("stdin") : name + " (" + std::to_string(size) + " bytes)";
  }
  f.value = h == 0 ? 1 : h;  // 0 means "no job"
  return f;
}

// Runs (or resumes) the job `inputs` into `g`, recording progress in `st`. `flush` makes all
// heap writes so far durable atomically and returns the watermark; `progress` (may be empty) is
// called after every batch. See the protocol and error contract at the top of this file.
template <class Graph, class State>
ingest_report ingest(Graph& g, State& st, const std::vector<std::string>& inputs,
                     const ingest_options& opt, const std::function<std::uint64_t()>& flush,
                     const std::function<void(const ingest_progress&)>& progress = {}) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  if (inputs.empty()) throw ingest_usage_error("no inputs given");
  if (opt.batch_size == 0) throw ingest_usage_error("batch size must be >= 1");
  const unsigned threads = std::max(1u, opt.threads);
  const input_fingerprint fp = fingerprint_inputs(inputs, opt.format, Graph::kind);

  ingest_report rep;
  rep.final.inputs = inputs.size();
  if (st.active) {
    const std::string where = "input " + std::to_string(st.input_index + 1) + ", byte " +
                              std::to_string(st.byte_offset) + ", " + std::to_string(st.edges) +
                              " edges committed";
    if (opt.abandon_incomplete) {
      st.active = 0;  // keep committed edges; the new job starts below
    } else if (st.fingerprint != fp.value) {
      throw ingest_usage_error(
          "the datastore holds an unfinished ingestion of different inputs: " +
          std::string(st.description.c_str()) + " (" + where +
          "). Rerun that command to finish it, or pass --abandon-incomplete to keep what it "
          "committed and start this one.");
    } else if (st.from_stdin) {
      throw ingest_usage_error(
          "the unfinished ingestion read stdin (" + where +
          "), which cannot be resumed. The graph holds the edges up to that point; pass "
          "--abandon-incomplete to keep them and start a new ingestion.");
    } else {
      rep.resumed = true;
      rep.resumed_at_edges = st.edges;
      rep.resumed_input = st.input_index;
      rep.resumed_offset = st.byte_offset;
    }
  }
  if (!rep.resumed) {
    const bool done_before = !fp.has_stdin &&
        std::find(st.completed.begin(), st.completed.end(), fp.value) != st.completed.end();
    if (done_before && !opt.reingest) {
      rep.already_done = true;
      rep.final.seconds = std::chrono::duration<double>(clock::now() - t0).count();
      return rep;
    }
    // Becomes durable together with the first batch's edges (same watermark).
    st.fingerprint = fp.value;
    st.active = 1;
    st.from_stdin = fp.has_stdin ? 1 : 0;
    st.input_index = 0;
    st.byte_offset = 0;
    st.line = 0;
    st.edges = 0;
    st.bad_lines = 0;
    st.description.assign(fp.description.c_str());
  }

  bank_locks locks(g.num_banks());
  ingest_progress& pr = rep.final;
  std::uint64_t unflushed_edges = 0;
  auto last_flush = clock::now();
  bool dirty = !rep.resumed;  // state changed since the last watermark
  auto do_flush = [&] {
    pr.watermark = flush();
    ++rep.flushes;
    unflushed_edges = 0;
    last_flush = clock::now();
    dirty = false;
  };
  auto insert_batch = [&](const std::vector<edge>& batch) {
    if (threads == 1 || batch.size() < 2 * threads) {
      for (const edge& e : batch) g.insert(e, nullptr);
      return;
    }
    std::vector<std::thread> pool;
    std::vector<std::exception_ptr> errs(threads);
    const std::size_t per = (batch.size() + threads - 1) / threads;
    for (unsigned t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        try {
          const std::size_t lo = std::min(batch.size(), t * per);
          const std::size_t hi = std::min(batch.size(), lo + per);
          for (std::size_t i = lo; i < hi; ++i) g.insert(batch[i], &locks);
        } catch (...) {
          errs[t] = std::current_exception();
        }
      });
    }
    for (auto& th : pool) th.join();
    for (auto& e : errs)
      if (e) std::rethrow_exception(e);
  };

  reader_options ropt;
  ropt.format = opt.format;
  ropt.weights = Graph::kind;
  ropt.skip_bad_lines = opt.skip_bad_lines;
  ropt.buffer_bytes = opt.read_buffer_bytes;

  std::vector<edge> cur, next;
  cur.reserve(std::min<std::size_t>(opt.batch_size, std::size_t{1} << 24));
  next.reserve(cur.capacity());
  for (std::size_t idx = st.input_index; idx < inputs.size(); ++idx) {
    pr.input_index = idx;
    const std::uint64_t start_off = idx == st.input_index ? st.byte_offset : 0;
    const std::uint64_t start_line = idx == st.input_index ? st.line : 0;
    edge_reader rd(inputs[idx], ropt, start_off, start_line);
    std::uint64_t bad_before = rd.bad_lines();
    std::uint64_t prev_off = start_off;
    const std::uint64_t bytes_before = pr.bytes_this_run;
    cur.clear();
    rd.read(cur, opt.batch_size);
    for (;;) {
      const std::uint64_t off_after = rd.offset();
      const std::uint64_t line_after = rd.line();
      const std::uint64_t bad_after = rd.bad_lines();
      if (cur.empty() && off_after == prev_off && bad_after == bad_before) break;
      prev_off = off_after;
      // Parse the next batch (DRAM only) while the workers insert this one.
      next.clear();
      std::exception_ptr read_err;
      std::thread reader_thread;
      const bool more = !rd.eof() && !rd.failed();
      if (more) {
        reader_thread = std::thread([&] {
          try {
            rd.read(next, opt.batch_size);
          } catch (...) {
            read_err = std::current_exception();
          }
        });
      }
      try {
        insert_batch(cur);
      } catch (...) {
        if (reader_thread.joinable()) reader_thread.join();
        throw;  // partial batch: caller must not flush (see contract)
      }
      if (reader_thread.joinable()) reader_thread.join();
      // The batch is fully inserted: advance the durable position.
      st.input_index = idx;
      st.byte_offset = off_after;
      st.line = line_after;
      st.edges += cur.size();
      st.total_edges += cur.size();
      st.bad_lines += bad_after - bad_before;
      bad_before = bad_after;
      dirty = true;
      unflushed_edges += cur.size();
      pr.edges = st.edges;
      pr.edges_this_run += cur.size();
      pr.bad_lines = st.bad_lines;
      pr.bytes_this_run = bytes_before + (off_after - start_off);
      const bool by_edges = opt.flush_every_edges != 0 && unflushed_edges >= opt.flush_every_edges;
      const bool by_time =
          opt.flush_every_seconds > 0 &&
          std::chrono::duration<double>(clock::now() - last_flush).count() >= opt.flush_every_seconds;
      if (by_edges || by_time) do_flush();
      pr.seconds = std::chrono::duration<double>(clock::now() - t0).count();
      if (progress) progress(pr);
      if (read_err) std::rethrow_exception(read_err);  // I/O error: heap consistent, unflushed
      cur.swap(next);
      if (!more) break;
    }
    pr.bytes_this_run = bytes_before + (rd.offset() - start_off);
    if (rd.failed()) {
      // Commit everything before the bad line, then report it. A rerun with --skip-bad-lines
      // (same inputs, same fingerprint) resumes exactly at that line.
      if (dirty) do_flush();
      throw rd.error();
    }
    // Next input starts at its beginning; recorded with the next batch or the final flush.
    if (idx + 1 < inputs.size()) {
      st.input_index = idx + 1;
      st.byte_offset = 0;
      st.line = 0;
      dirty = true;
    }
  }
  st.active = 0;
  st.input_index = inputs.size();
  ++st.jobs_completed;
  if (!fp.has_stdin &&
      std::find(st.completed.begin(), st.completed.end(), fp.value) == st.completed.end()) {
    st.completed.push_back(fp.value);
  }
  do_flush();
  pr.seconds = std::chrono::duration<double>(clock::now() - t0).count();
  pr.edges = st.edges;
  if (progress) progress(pr);
  return rep;
}

}  // namespace pheap::graph
