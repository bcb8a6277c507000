// The ingestion engine behind pheap/graph/ingest.hpp (protocol and error contract there).
//
// run_ingest, as a protocol:
//   check_request       no inputs or a zero batch size: usage error, nothing touched
//   start_or_resume     start_job: an unfinished job: resume it, abandon it, or refuse; a
//                       finished one: nothing to do; else record a new job (durable with the
//                       first batch). Shared with the distributed engine (graph/mpi/ingest.cpp)
//   for each input from the recorded one:
//     ingest_input      batches read from the recorded position; per batch:
//                         insert        grouped by vertex over N threads (with
//                                       ingest_options::prefetch, a look-ahead asks for the
//                                       lists ahead of them); the next batch is parsed meanwhile
//                         record_batch  (advance the position: the only state write per batch)
//                         flush_if_due, report_progress
//                       a bad line of a strict reader: flush what precedes it, throw it
//   finish_job          end_job (mark the job finished; shared with the distributed engine),
//                       ingest_options::on_finish (the caller's last writes of the job),
//                       flush, report
// A throw from the insertion leaves a partly inserted batch behind: the caller must not flush.
#include <pheap/graph/ingest.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <filesystem>
#include <optional>
#include <thread>
#include <utility>

namespace pheap::graph {

input_fingerprint fingerprint_inputs(const std::vector<std::string>& inputs, input_format format,
                                     weight_kind weights) {
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
  bool seen_stdin = false;
  for (const auto& in : inputs) {
    std::string name, shown;
    std::uint64_t size = 0;
    if (in == "-") {
      if (seen_stdin) throw ingest_usage_error("stdin ('-') can be given only once");
      seen_stdin = true;
      name = "-";
      shown = "stdin";
    } else {
      struct stat st {};
      if (::stat(in.c_str(), &st) != 0) {
        throw ingest_usage_error("cannot stat input " + in + ": " + std::strerror(errno));
      }
      if (S_ISDIR(st.st_mode)) throw ingest_usage_error("input " + in + " is a directory");
      shown = std::filesystem::absolute(in).lexically_normal().string();
      if (S_ISREG(st.st_mode)) {
        name = shown;
        size = static_cast<std::uint64_t>(st.st_size);
        shown += " (" + std::to_string(size) + " bytes)";
      } else {
        name = "-";  // a stream: identified by its position, like stdin (see "Job identity")
        shown += " (a stream)";
      }
    }
    f.has_stdin = f.has_stdin || name == "-";
    mixin(name.data(), name.size() + 1);
    mixin(&size, sizeof size);
    if (!f.description.empty()) f.description += ", ";
    f.description += shown;
  }
  f.value = h == 0 ? 1 : h;  // 0 means "no job"
  return f;
}

std::uint64_t ingest_memory(const std::vector<std::string>& inputs, const ingest_options& opt) {
  std::uint64_t batch = opt.batch_size;
  std::uint64_t most_edges = 0;  // what the inputs can hold, if every decoded size is known
  bool known = !inputs.empty();
  for (const auto& in : inputs) {
    const std::optional<std::uint64_t> s = in == "-" ? std::nullopt : decoded_size(in);
    if (!s) {
      known = false;
      break;
    }
    most_edges += *s / (opt.format == input_format::binary ? 16 : 4) + 1;
  }
  if (known) batch = std::min(batch, most_edges);
  // Per edge of a batch: itself twice (inserted, parsed ahead), two bank references and the
  // half flags; beside them the read buffer and the prefetch's 512 KiB of sorted ids.
  const std::uint64_t per_edge = 2 * sizeof(edge) + 2 * sizeof(std::uint32_t) + 1;
  return batch * per_edge + opt.read_buffer_bytes + (std::uint64_t{1} << 19);
}

namespace detail {

namespace {

using clock = std::chrono::steady_clock;

double seconds_since(clock::time_point t) {
  return std::chrono::duration<double>(clock::now() - t).count();
}

void check_request(const std::vector<std::string>& inputs, const ingest_options& opt) {
  if (inputs.empty()) throw ingest_usage_error("no inputs given");
  if (opt.batch_size == 0) throw ingest_usage_error("batch size must be >= 1");
}

// A batch and where the reader stood right after it.
struct batch {
  std::vector<edge> edges;
  std::uint64_t end_offset = 0;  // of the next unread line or record
  std::uint64_t end_line = 0;
  std::uint64_t bad_lines = 0;   // lines skipped within this batch
  std::optional<std::uint32_t> end_crc;  // of the input's bytes before end_offset
};

// Reads one input batch by batch from a recorded position. While the caller inserts one
// batch, the next is parsed on a background thread (into DRAM only: no heap write happens
// off the inserting threads).
class batch_source {
 public:
  batch_source(const std::string& path, const reader_options& ro, std::uint64_t offset,
               std::uint64_t line, const input_prefix& prefix, std::size_t batch_size)
      : rd_(path, ro, offset, line, prefix), batch_size_(batch_size), last_offset_(offset),
        last_bad_(rd_.bad_lines()) {
    ahead_.edges.reserve(std::min<std::size_t>(batch_size, std::size_t{1} << 24));
    rd_.read(ahead_.edges, batch_size_);
    mark_position();
  }
  ~batch_source() { (void)settle(); }  // also when an insert threw: the read must stop first
  batch_source(const batch_source&) = delete;
  batch_source& operator=(const batch_source&) = delete;

  // Moves the next batch into `b` (recycling b's buffer) and starts parsing the one after.
  // False at the end: the reader stopped (end of input, bad line) or made no progress.
  bool take(batch& b) {
    if (stopped_) return false;
    if (ahead_.edges.empty() && ahead_.end_offset == last_offset_ && ahead_.bad_lines == last_bad_) {
      return false;
    }
    std::swap(b, ahead_);
    b.bad_lines -= last_bad_;
    last_offset_ = b.end_offset;
    last_bad_ += b.bad_lines;
    ahead_.edges.clear();
    stopped_ = rd_.eof() || rd_.failed();
    if (!stopped_) {
      thread_ = std::thread([this] {
        try {
          rd_.read(ahead_.edges, batch_size_);
        } catch (...) {
          read_error_ = std::current_exception();
        }
      });
    }
    return true;
  }

  // Waits for the background read; returns its error (null if none).
  std::exception_ptr settle() {
    if (thread_.joinable()) {
      thread_.join();
      mark_position();
    }
    return std::exchange(read_error_, nullptr);
  }

  const edge_reader& reader() const noexcept { return rd_; }

 private:
  void mark_position() {  // ahead_.bad_lines holds the reader's total until take()
    ahead_.end_offset = rd_.offset();
    ahead_.end_line = rd_.line();
    ahead_.bad_lines = rd_.bad_lines();
    ahead_.end_crc = rd_.consumed_checksum();
  }

  edge_reader rd_;
  std::size_t batch_size_;
  batch ahead_;
  std::uint64_t last_offset_, last_bad_;
  bool stopped_ = false;
  std::thread thread_;
  std::exception_ptr read_error_;
};

// One call of ingest(): the job's counters (a copy of the state's, saved back at the
// protocol's points), the report and the flush policy.
class ingest_run {
 public:
  ingest_run(ingest_target& target, const std::vector<std::string>& inputs,
             const ingest_options& opt, const std::function<std::uint64_t()>& flush,
             const std::function<void(const ingest_progress&)>& progress)
      : t_(target), inputs_(inputs), opt_(opt), flush_(flush), progress_(progress),
        fp_(fingerprint_inputs(inputs, opt.format, target.weights())),
        c_(target.load()) {
    pr().inputs = inputs.size();
    insert_.threads = std::max(1u, opt.threads);
    insert_.prefetch = opt.prefetch;
    insert_.prefetch_window_bytes = opt.prefetch_window_bytes;
  }

  // False when the job finished before (nothing to do).
  bool start_or_resume() {
    if (!start_job(t_, c_, fp_, opt_, rep_)) {
      pr().seconds = seconds_since(t0_);
      return false;
    }
    dirty_ = dirty_ || !rep_.resumed;  // a new job is durable with its first batch
    return true;
  }

  std::size_t first_input() const noexcept { return c_.input_index; }

  void ingest_input(std::size_t idx) {
    pr().input_index = idx;
    const bool at_recorded = idx == c_.input_index;
    const std::uint64_t start_off = at_recorded ? c_.byte_offset : 0;
    // A resume reads the consumed bytes again and, when the watermark holds their checksum,
    // compares ("Changed inputs").
    input_prefix prefix;
    prefix.how = c_.crc_known ? input_prefix::mode::verify : input_prefix::mode::checksum;
    prefix.crc = c_.consumed_crc;
    if (start_off != 0 && !c_.crc_known) rep_.resume_unverified = true;
    std::optional<batch_source> opened;
    try {
      opened.emplace(inputs_[idx], reader_opts(), start_off, at_recorded ? c_.line : 0, prefix,
                     opt_.batch_size);
    } catch (const input_changed& e) {
      throw changed_input_error(idx, e.what(), c_.edges);
    }
    batch_source& src = *opened;
    const std::uint64_t bytes_before = pr().bytes_this_run;
    while (src.take(cur_)) {
      t_.insert(cur_.edges, insert_);  // throws: partial batch, no flush
      const std::exception_ptr read_error = src.settle();
      record_batch(idx, cur_);
      pr().bytes_this_run = bytes_before + (cur_.end_offset - start_off);
      flush_if_due();
      report_progress();
      if (read_error) std::rethrow_exception(read_error);  // heap consistent, unflushed
    }
    pr().bytes_this_run = bytes_before + (src.reader().offset() - start_off);
    if (src.reader().failed()) {
      // Commit everything before the bad line, then report it. A rerun with --skip-bad-lines
      // (same inputs, same fingerprint) resumes exactly at that line.
      if (dirty_) flush_now();
      throw src.reader().error();
    }
    if (idx + 1 < inputs_.size()) next_input(idx + 1);
  }

  void finish_job() {
    end_job(t_, c_, fp_, inputs_.size());
    if (opt_.on_finish) opt_.on_finish();
    flush_now();
    pr().edges = c_.edges;
    report_progress();
  }

  ingest_report& report() noexcept { return rep_; }

 private:
  ingest_progress& pr() noexcept { return rep_.final; }

  reader_options reader_opts() const {
    reader_options ro;
    ro.format = opt_.format;
    ro.weights = t_.weights();
    ro.skip_bad_lines = opt_.skip_bad_lines;
    ro.buffer_bytes = opt_.read_buffer_bytes;
    return ro;
  }

  // The batch is fully inserted: advance the durable position past it.
  void record_batch(std::size_t idx, const batch& b) {
    const std::uint64_t n = b.edges.size();
    c_.input_index = idx;
    c_.byte_offset = b.end_offset;
    c_.line = b.end_line;
    c_.edges += n;
    c_.total_edges += n;
    c_.bad_lines += b.bad_lines;
    c_.consumed_crc = b.end_crc.value_or(0);
    c_.crc_known = b.end_crc.has_value();
    t_.save(c_);
    dirty_ = true;
    unflushed_edges_ += n;
    pr().edges = c_.edges;
    pr().edges_this_run += n;
    pr().bad_lines = c_.bad_lines;
  }

  // The next input starts at its beginning; recorded with its first batch or the final flush.
  void next_input(std::size_t idx) {
    c_.input_index = idx;
    c_.byte_offset = 0;
    c_.line = 0;
    c_.consumed_crc = 0;
    c_.crc_known = true;
    t_.save(c_);
    dirty_ = true;
  }

  void flush_if_due() {
    const bool by_edges = opt_.flush_every_edges != 0 && unflushed_edges_ >= opt_.flush_every_edges;
    const bool by_time = opt_.flush_every_seconds > 0 && seconds_since(last_flush_) >= opt_.flush_every_seconds;
    if (by_edges || by_time) flush_now();
  }

  void flush_now() {
    pr().watermark = flush_();
    ++rep_.flushes;
    unflushed_edges_ = 0;
    last_flush_ = clock::now();
    dirty_ = false;
  }

  void report_progress() {
    pr().seconds = seconds_since(t0_);
    if (progress_) progress_(pr());
  }

  ingest_target& t_;
  const std::vector<std::string>& inputs_;
  const ingest_options& opt_;
  const std::function<std::uint64_t()>& flush_;
  const std::function<void(const ingest_progress&)>& progress_;
  const clock::time_point t0_ = clock::now();
  const input_fingerprint fp_;
  job_counters c_;
  grouped_insert_options insert_;  // threads and prefetch, from opt_
  ingest_report rep_;
  batch cur_;
  std::uint64_t unflushed_edges_ = 0;
  clock::time_point last_flush_ = clock::now();
  bool dirty_ = false;  // the state changed since the last watermark
};

}  // namespace

namespace {

// An unfinished job is in the state: abandon it (keeping its edges), refuse to run another
// or to resume stdin, or resume it.
void resume_or_abandon(ingest_target& t, job_counters& c, const input_fingerprint& fp,
                       const ingest_options& opt, ingest_report& rep) {
  const std::string where = "input " + std::to_string(c.input_index + 1) + ", byte " +
                            std::to_string(c.byte_offset) + ", " + std::to_string(c.edges) +
                            " edges committed";
  if (opt.abandon_incomplete) {
    c.active = 0;  // keep committed edges; the new job starts in begin_job
    t.save(c);
  } else if (c.fingerprint != fp.value) {
    throw ingest_usage_error(
        "the datastore holds an unfinished ingestion of different inputs: " + t.description() +
        " (" + where +
        "). Rerun that command to finish it, or pass --abandon-incomplete to keep what it "
        "committed and start this one.");
  } else if (c.from_stdin && !c.crc_known && c.byte_offset != 0) {
    // A stream is resumed by reading it again from its start; without the checksum of the
    // bytes read before (a watermark of an older pheap-graph) nothing says they are the same.
    throw ingest_usage_error(
        "the unfinished ingestion read a stream (stdin or a pipe: " + t.description() + "; " + where +
        ") and its watermark holds no checksum of what it read, so it cannot be resumed. The graph "
        "holds the edges up to that point; pass --abandon-incomplete to keep them and start a new "
        "ingestion.");
  } else {
    rep.resumed = true;
    rep.resumed_at_edges = c.edges;
    rep.resumed_input = c.input_index;
    rep.resumed_offset = c.byte_offset;
  }
}

// Records a new job; durable together with the first batch's edges (same watermark).
void begin_job(ingest_target& t, job_counters& c, const input_fingerprint& fp) {
  c.fingerprint = fp.value;
  c.active = 1;
  c.from_stdin = fp.has_stdin ? 1 : 0;
  c.input_index = 0;
  c.byte_offset = 0;
  c.line = 0;
  c.edges = 0;
  c.bad_lines = 0;
  c.consumed_crc = 0;
  c.crc_known = true;
  t.save(c);
  t.set_description(fp.description);
}

}  // namespace

ingest_usage_error changed_input_error(std::size_t input, const std::string& what,
                                       std::optional<std::uint64_t> edges) {
  return ingest_usage_error(
      "input " + std::to_string(input + 1) + " of the unfinished ingestion changed since its last watermark: " +
      what + ". The graph keeps the " + (edges ? std::to_string(*edges) + " " : std::string()) +
      "edges this job committed, from the input as it was; rerun with it as it was to finish the job, or pass "
      "--abandon-incomplete to keep those edges and ingest the inputs as they are now from their start.");
}

bool start_job(ingest_target& t, job_counters& c, const input_fingerprint& fp, const ingest_options& opt,
               ingest_report& rep) {
  if (c.active) resume_or_abandon(t, c, fp, opt, rep);
  if (rep.resumed) return true;
  if (!fp.has_stdin && t.completed(fp.value) && !opt.reingest) {
    rep.already_done = true;
    return false;
  }
  begin_job(t, c, fp);
  return true;
}

void end_job(ingest_target& t, job_counters& c, const input_fingerprint& fp, std::size_t inputs) {
  c.active = 0;
  c.input_index = inputs;
  c.crc_known = false;
  ++c.jobs_completed;
  t.save(c);
  if (!fp.has_stdin && !t.completed(fp.value)) t.add_completed(fp.value);
}

ingest_report run_ingest(ingest_target& target, const std::vector<std::string>& inputs,
                         const ingest_options& opt, const std::function<std::uint64_t()>& flush,
                         const std::function<void(const ingest_progress&)>& progress) {
  check_request(inputs, opt);
  ingest_run run(target, inputs, opt, flush, progress);
  if (!run.start_or_resume()) return run.report();
  for (std::size_t idx = run.first_input(); idx < inputs.size(); ++idx) run.ingest_input(idx);
  run.finish_job();
  return run.report();
}

}  // namespace detail
}  // namespace pheap::graph
