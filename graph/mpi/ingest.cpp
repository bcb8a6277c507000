// The distributed ingestion engine behind pheap/graph/mpi/ingest.hpp (protocol in
// graph/mpi/FORMAT.md). Each rank runs, in lockstep with the others:
//
//   open_graph      (agreed) the graph and its partition record on this rank, made when missing
//   start           (agreed) start_job, the single-process rule (resume, abandon, refuse, or
//                   nothing to do); a new job records this rank's input ranges (split_inputs)
//                   in the partition record; every rank must decide alike
//   per batch:      read_batch (this rank's ranges) -> exchange (MPI_Alltoall of the counts,
//                   MPI_Alltoallv of the records) -> insert -> record_batch (this rank's
//                   position) -> agree_batch (one MPI_Allreduce: edges, bytes, still reading,
//                   failed, flush due) -> flush_now when due (datastore::flush: all ranks)
//   stop_at_bad_line  a strict reader stopped on some rank: flush, then that rank throws
//   finish_job      mark the job finished on every rank, flush
// A throw between insert and the next flush leaves a batch half inserted: the caller must not
// flush (the tool leaves without destructors; pheap::mpi::datastore never commits on its own).
#include <pheap/graph/mpi/ingest.hpp>

#include <pheap/graph/grouped_insert.hpp>
#include <pheap/sparse_store.hpp>

#include <chrono>
#include <climits>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <type_traits>

namespace pheap::graph::mpi {

rank_failed::rank_failed(int rank, kind_t kind)
    : std::runtime_error("rank " + std::to_string(rank) + " failed (it reported the cause)"), rank_(rank), kind_(kind) {}

namespace {

using clock = std::chrono::steady_clock;
using pheap::graph::detail::ingest_target;
using pheap::graph::detail::job_counters;

int rank_of(MPI_Comm comm) {
  int r = 0;
  MPI_Comm_rank(comm, &r);
  return r;
}
int size_of(MPI_Comm comm) {
  int n = 0;
  MPI_Comm_size(comm, &n);
  return n;
}

rank_failed::kind_t kind_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const ingest_usage_error&) {
    return rank_failed::usage;
  } catch (const input_error&) {
    return rank_failed::input;
  } catch (...) {
    return rank_failed::other;
  }
}

// Runs fn on this rank; when it threw on any rank, the lowest failing rank rethrows its
// exception and the others throw rank_failed naming it. One MPI_Allreduce (+ a Bcast).
template <class F>
void agreed(MPI_Comm comm, F&& fn) {
  std::exception_ptr mine;
  try {
    fn();
  } catch (...) {
    mine = std::current_exception();
  }
  const int me = rank_of(comm);
  int flag = mine ? me : INT_MAX, first = INT_MAX;
  MPI_Allreduce(&flag, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == INT_MAX) return;
  int kind = mine ? static_cast<int>(kind_of(mine)) : 0;
  MPI_Bcast(&kind, 1, MPI_INT, first, comm);
  if (me == first) std::rethrow_exception(mine);
  throw rank_failed(first, static_cast<rank_failed::kind_t>(kind));
}

// Calls f(std::type_identity<W>{}) with the weight type of `k`.
template <class F>
decltype(auto) with_weight_type(weight_kind k, F&& f) {
  switch (k) {
    case weight_kind::u64: return f(std::type_identity<std::uint64_t>{});
    case weight_kind::f32: return f(std::type_identity<float>{});
    case weight_kind::none: break;
  }
  return f(std::type_identity<void>{});
}

// What one rank asks the owner of `src` to store.
struct routed {
  static constexpr std::uint64_t edge_both = 0;    // graph.insert(edge): both endpoints are here
  static constexpr std::uint64_t arc_only = 1;     // add_arc(src, dst)
  static constexpr std::uint64_t vertex_only = 2;  // ensure_vertex(src)
  std::uint64_t src, dst, weight, kind;
};

// The records an edge becomes: what graph.insert(e) does in one process, split by owner.
template <class Emit>
void route(const edge& e, bool directed, int ranks, Emit&& emit) {
  const int a = owner_of(e.src, ranks), b = owner_of(e.dst, ranks);
  if (a == b) {
    emit(a, routed{e.src, e.dst, e.weight, routed::edge_both});
    return;
  }
  emit(a, routed{e.src, e.dst, e.weight, routed::arc_only});
  if (directed) {
    emit(b, routed{e.dst, e.dst, 0, routed::vertex_only});
  } else {
    emit(b, routed{e.dst, e.src, e.weight, routed::arc_only});
  }
}

// A batch of records inserted grouped by vertex, bank by bank, as a single process inserts a
// batch (grouped_insert.hpp): each vertex is looked up once and its list grown at most once per
// batch, so out of core a batch faults each page it touches about once. Every list ends up as
// the records applied one by one in order would leave it (g.insert / add_arc / ensure_vertex):
// a record is an edge and the halves of it this rank stores. The scratch is kept from batch to
// batch (its DRAM: 25 bytes per record, plus the inserter's, grouped_insert.hpp "DRAM").
class routed_inserter {
 public:
  template <class G>
  void insert(G& g, std::span<const routed> records) {
    using gi = grouped_inserter;
    edges_.clear();
    halves_.clear();
    if (edges_.capacity() < records.size()) {  // once per size: no doubling burst (memory_limit.hpp)
      edges_.reserve(records.size());
      halves_.reserve(records.size());
    }
    for (const routed& r : records) {
      if (r.kind == routed::edge_both) {
        edges_.push_back(edge{r.src, r.dst, r.weight});
        halves_.push_back(gi::src_half | gi::dst_half);
      } else if (r.kind == routed::arc_only) {
        edges_.push_back(edge{r.src, r.dst, r.weight});
        halves_.push_back(gi::src_half);
      } else {  // ensure_vertex(src): the dst half of an edge into src (a directed graph's)
        edges_.push_back(edge{r.src, r.src, 0});
        halves_.push_back(gi::dst_half);
      }
    }
    inserter_.insert(g, std::span<const edge>(edges_), std::span<const std::uint8_t>(halves_));
  }

 private:
  std::vector<edge> edges_;
  std::vector<std::uint8_t> halves_;
  grouped_inserter inserter_;
};

// The partition record of `name` on this rank, made when missing, and checked.
persistent_partition& partition_of(pheap::mpi::datastore& ds, const std::string& name) {
  pheap::manager& m = ds.local();
  m.find_or_construct<persistent_partition>(partition_name(name))(
      static_cast<std::uint64_t>(ds.size()), static_cast<std::uint64_t>(ds.rank()), m.get_allocator<std::byte>());
  return const_cast<persistent_partition&>(check_partition(m, name, ds.size(), ds.rank()));
}

// The graph `name` of type W on this rank and its partition record, made when missing.
template <class W>
persistent_graph<W>& open_graph(pheap::mpi::datastore& ds, const std::string& name, const graph_spec& spec) {
  persistent_graph<W>& g = open_or_create_graph<W>(ds.local(), name, spec.directed, spec.banks);
  partition_of(ds, name);
  return g;
}

// The sums over the ranks of one batch (agree_batch).
struct batch_totals {
  std::uint64_t edges = 0, bytes = 0, bad_lines = 0, reading = 0, failed = 0, flush_due = 0;
};

// One call of ingest() on one rank (see the protocol at the top).
class distributed_run {
 public:
  distributed_run(MPI_Comm comm, pheap::mpi::datastore& ds, ingest_target& t, persistent_partition& part,
                  bool directed, const std::vector<std::string>& inputs, const ingest_options& opt,
                  std::function<void(std::span<const routed>)> insert,
                  const std::function<void(const ingest_progress&)>& progress)
      : comm_(comm), ds_(ds), t_(t), part_(part), directed_(directed), ranks_(size_of(comm)), inputs_(inputs),
        opt_(opt), insert_(std::move(insert)), progress_(progress) {
    MPI_Type_contiguous(4, MPI_UINT64_T, &record_type_);
    MPI_Type_commit(&record_type_);
    rep_.ranks = static_cast<std::uint64_t>(ranks_);
    pr().inputs = inputs.size();
  }
  ~distributed_run() { MPI_Type_free(&record_type_); }
  distributed_run(const distributed_run&) = delete;
  distributed_run& operator=(const distributed_run&) = delete;

  // False when the job finished before (nothing to do).
  bool start() {
    agreed(comm_, [&] { start_local(); });
    const int decision = work_ ? (rep_.job.resumed ? 2 : 1) : 0;
    int lo = 0, hi = 0;
    MPI_Allreduce(&decision, &lo, 1, MPI_INT, MPI_MIN, comm_);
    MPI_Allreduce(&decision, &hi, 1, MPI_INT, MPI_MAX, comm_);
    if (lo != hi) {
      throw pheap::error(pheap::errc::corrupt, ds_.path(), "ingest",
                         "the ranks' ingestion records disagree (some would resume, start or skip the job)");
    }
    std::uint64_t mine[3] = {c_.edges, c_.bad_lines, rep_.job.resume_unverified ? 1u : 0u}, sum[3] = {0, 0, 0};
    MPI_Allreduce(mine, sum, 3, MPI_UINT64_T, MPI_SUM, comm_);
    pr().edges = sum[0];
    pr().bad_lines = sum[1];
    rep_.job.resume_unverified = sum[2] != 0;  // on some rank
    rep_.job.resumed_at_edges = rep_.job.resumed ? sum[0] : 0;
    if (!work_) pr().seconds = seconds_since(t0_);
    return work_;
  }

  void run_batches() {
    for (;;) {
      read_batch();
      exchange();
      insert_(received_);
      record_batch();
      const batch_totals g = agree_batch();
      unflushed_ += g.edges;
      const bool due = (opt_.flush_every_edges != 0 && unflushed_ >= opt_.flush_every_edges) || g.flush_due != 0;
      if (due || g.failed != 0) flush_now();
      report_progress();
      if (g.failed != 0) stop_at_bad_line();
      if (g.reading == 0) return;
    }
  }

  void finish_job() {
    pheap::graph::detail::end_job(t_, c_, fp_, inputs_.size());
    flush_now();
    report_progress();
  }

  // Collective: the report, with the exchange counts of every rank summed.
  distributed_report& report() {
    std::uint64_t mine[2] = {records_out_, bytes_out_}, sum[2] = {0, 0};
    MPI_Allreduce(mine, sum, 2, MPI_UINT64_T, MPI_SUM, comm_);
    rep_.records_exchanged = sum[0];
    rep_.bytes_exchanged = sum[1];
    return rep_;
  }

 private:
  ingest_progress& pr() noexcept { return rep_.job.final; }
  static double seconds_since(clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); }

  void start_local() {
    if (inputs_.empty()) throw ingest_usage_error("no inputs given");
    if (opt_.batch_size == 0) throw ingest_usage_error("batch size must be >= 1");
    fp_ = fingerprint_inputs(inputs_, opt_.format, t_.weights());
    c_ = t_.load();
    work_ = pheap::graph::detail::start_job(t_, c_, fp_, opt_, rep_.job);
    if (!work_) return;
    if (rep_.job.resumed) {
      if (part_.fingerprint != c_.fingerprint || part_.ranges.size() != 2 * inputs_.size()) {
        throw pheap::error(pheap::errc::corrupt, ds_.local().path(), "resume ingestion",
                           "the partition record does not hold the input ranges of the unfinished job");
      }
    } else {
      record_ranges();
    }
    for (std::size_t i = 0; i < inputs_.size(); ++i) ranges_.push_back({part_.ranges[2 * i], part_.ranges[2 * i + 1]});
    cur_ = static_cast<std::size_t>(c_.input_index);
    offset_ = c_.byte_offset;
    line_ = c_.line;
    crc_ = c_.consumed_crc;
    crc_known_ = c_.crc_known;
    if (rep_.job.resumed && cur_ < inputs_.size()) verify_consumed();
  }

  // A resume reads this rank's consumed bytes of its current input again (from its range's
  // start) and, when the watermark holds their checksum, compares: a changed input is refused
  // here, where every rank agrees on the outcome ("Changed inputs" in graph/mpi/FORMAT.md).
  void verify_consumed() {
    if (offset_ != ranges_[cur_].begin && !crc_known_) rep_.job.resume_unverified = true;
    try {
      open_reader();
    } catch (const input_changed& e) {
      // This rank's count alone would mislead: the job's edges are summed over the ranks.
      throw pheap::graph::detail::changed_input_error(
          cur_, std::string(e.what()) + " (the part rank " + std::to_string(rank_of(comm_)) + " reads)", std::nullopt);
    }
  }

  // The reader of input cur_ from the recorded position, checksumming from its range's start.
  void open_reader() {
    input_prefix prefix;
    prefix.how = crc_known_ ? input_prefix::mode::verify : input_prefix::mode::checksum;
    prefix.crc = crc_;
    prefix.base = ranges_[cur_].begin;
    reader_ = std::make_unique<edge_reader>(inputs_[cur_], reader_opts(ranges_[cur_].end), offset_, line_, prefix);
  }

  // A new job: this rank's ranges, durable with the first batch (like the job itself).
  void record_ranges() {
    const auto ranges = split_inputs(inputs_, opt_.format, t_.weights(), ranks_, rank_of(comm_));
    part_.fingerprint = fp_.value;
    part_.ranges.clear();
    for (const byte_range& r : ranges) {
      part_.ranges.push_back(r.begin);
      part_.ranges.push_back(r.end);
    }
    c_.byte_offset = ranges.front().begin;
    t_.save(c_);
  }

  reader_options reader_opts(std::uint64_t end) const {
    reader_options ro;
    ro.format = opt_.format;
    ro.weights = t_.weights();
    ro.skip_bad_lines = opt_.skip_bad_lines;
    ro.buffer_bytes = opt_.read_buffer_bytes;
    ro.end_offset = end;
    return ro;
  }

  bool reading() const noexcept { return cur_ < inputs_.size() && !failed_; }

  // Up to batch_size edges of this rank's ranges, from the recorded position on.
  void read_batch() {
    batch_.clear();
    batch_bad_ = 0;
    batch_bytes_ = 0;
    while (batch_.size() < opt_.batch_size && reading()) {
      if (!reader_) open_reader();
      const std::uint64_t bad_before = reader_->bad_lines(), off_before = reader_->offset();
      reader_->read(batch_, opt_.batch_size - batch_.size());
      batch_bad_ += reader_->bad_lines() - bad_before;
      batch_bytes_ += reader_->offset() - off_before;
      offset_ = reader_->offset();
      line_ = reader_->line();
      const std::optional<std::uint32_t> crc = reader_->consumed_checksum();
      crc_ = crc.value_or(0);
      crc_known_ = crc.has_value();
      if (reader_->failed()) {
        failed_ = true;
      } else if (reader_->eof()) {
        reader_.reset();
        if (++cur_ < inputs_.size()) {
          offset_ = ranges_[cur_].begin;
          line_ = 0;
          crc_ = 0;  // of nothing: the next input is read from its range's start
          crc_known_ = true;
        }
      }
    }
  }

  // Every record to its owner: MPI_Alltoall of the counts, MPI_Alltoallv of the records.
  void exchange() {
    std::vector<int> send_counts(static_cast<std::size_t>(ranks_), 0), recv_counts(send_counts.size(), 0);
    auto count = [&](int to, const routed&) { ++send_counts[static_cast<std::size_t>(to)]; };
    for (const edge& e : batch_) route(e, directed_, ranks_, count);
    std::vector<int> send_displs(send_counts.size(), 0), recv_displs(send_counts.size(), 0);
    for (std::size_t r = 1; r < send_counts.size(); ++r) send_displs[r] = send_displs[r - 1] + send_counts[r - 1];
    send_.resize(static_cast<std::size_t>(send_displs.back() + send_counts.back()));
    std::vector<int> fill = send_displs;
    auto place = [&](int to, const routed& rec) { send_[static_cast<std::size_t>(fill[static_cast<std::size_t>(to)]++)] = rec; };
    for (const edge& e : batch_) route(e, directed_, ranks_, place);
    MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, comm_);
    for (std::size_t r = 1; r < recv_counts.size(); ++r) recv_displs[r] = recv_displs[r - 1] + recv_counts[r - 1];
    received_.resize(static_cast<std::size_t>(recv_displs.back() + recv_counts.back()));
    MPI_Alltoallv(send_.data(), send_counts.data(), send_displs.data(), record_type_, received_.data(),
                  recv_counts.data(), recv_displs.data(), record_type_, comm_);
    const int me = rank_of(comm_);
    std::uint64_t to_others = 0;
    for (int r = 0; r < ranks_; ++r) {
      if (r != me) to_others += static_cast<std::uint64_t>(send_counts[static_cast<std::size_t>(r)]);
    }
    records_out_ += to_others;
    bytes_out_ += to_others * sizeof(routed) + static_cast<std::uint64_t>(ranks_ - 1) * sizeof(int);
  }

  // The batch is inserted everywhere: advance this rank's durable position past it.
  void record_batch() {
    c_.input_index = cur_;
    c_.byte_offset = offset_;
    c_.line = line_;
    c_.edges += batch_.size();
    c_.total_edges += batch_.size();
    c_.bad_lines += batch_bad_;
    c_.consumed_crc = crc_;
    c_.crc_known = crc_known_;
    t_.save(c_);
  }

  batch_totals agree_batch() {
    const bool time_due = opt_.flush_every_seconds > 0 && seconds_since(last_flush_) >= opt_.flush_every_seconds;
    const batch_totals mine{batch_.size(), batch_bytes_, batch_bad_, reading() ? 1u : 0u, failed_ ? 1u : 0u,
                            time_due ? 1u : 0u};
    batch_totals g;
    MPI_Allreduce(&mine, &g, sizeof(batch_totals) / sizeof(std::uint64_t), MPI_UINT64_T, MPI_SUM, comm_);
    bytes_out_ += sizeof(batch_totals) * static_cast<std::uint64_t>(ranks_ > 1 ? 1 : 0);
    ++rep_.batches;
    pr().edges += g.edges;
    pr().edges_this_run += g.edges;
    pr().bytes_this_run += g.bytes;
    pr().bad_lines += g.bad_lines;
    pr().input_index = std::min(cur_, inputs_.size() - 1);
    return g;
  }

  void flush_now() {
    pr().watermark = ds_.flush();
    ++rep_.job.flushes;
    unflushed_ = 0;
    last_flush_ = clock::now();
  }

  // Some rank's strict reader stopped at a malformed line; everything before it is flushed.
  void stop_at_bad_line() {
    agreed(comm_, [&] {
      if (failed_) throw reader_->error();
    });
  }

  void report_progress() {
    pr().seconds = seconds_since(t0_);
    if (progress_) progress_(pr());
  }

  MPI_Comm comm_;
  pheap::mpi::datastore& ds_;
  ingest_target& t_;
  persistent_partition& part_;
  const bool directed_;
  const int ranks_;
  const std::vector<std::string>& inputs_;
  const ingest_options& opt_;
  const std::function<void(std::span<const routed>)> insert_;
  const std::function<void(const ingest_progress&)>& progress_;
  MPI_Datatype record_type_{};
  const clock::time_point t0_ = clock::now();
  clock::time_point last_flush_ = clock::now();
  distributed_report rep_;
  input_fingerprint fp_;
  job_counters c_;
  bool work_ = false;
  std::vector<byte_range> ranges_;
  std::size_t cur_ = 0;  // input being read; inputs_.size() when this rank read all of its part
  std::uint64_t offset_ = 0, line_ = 0;
  std::uint32_t crc_ = 0;   // CRC32C of input cur_'s bytes [range begin, offset_), when crc_known_
  bool crc_known_ = false;
  std::unique_ptr<edge_reader> reader_;
  bool failed_ = false;
  std::vector<edge> batch_;
  std::uint64_t batch_bad_ = 0, batch_bytes_ = 0;
  std::vector<routed> send_, received_;
  std::uint64_t unflushed_ = 0, records_out_ = 0, bytes_out_ = 0;
};

// Makes the distributed datastore `path` with an empty graph on every rank, in a creation
// directory of the store's protocol (pheap::store_creation: locked by rank 0 while the ranks
// fill it, so a concurrent creator of the same name never removes it; an unlocked leftover of
// a killed creation is removed by the next one) published under `path` by rank 0 once its
// first global watermark holds the graph. A failure on any rank leaves nothing at `path`.
void create_distributed(MPI_Comm comm, const std::string& path, const std::string& name, const graph_spec& spec,
                        const pheap::options& opt) {
  std::optional<pheap::store_creation> creation;  // rank 0's
  std::string tmp;
  agreed(comm, [&] {
    if (rank_of(comm) != 0) return;
    creation.emplace(pheap::store_creation::make(path, "create", opt.engine));
    tmp = creation->path();
  });
  unsigned long len = tmp.size();
  MPI_Bcast(&len, 1, MPI_UNSIGNED_LONG, 0, comm);
  tmp.resize(len);
  MPI_Bcast(tmp.data(), static_cast<int>(len), MPI_CHAR, 0, comm);
  {
    pheap::mpi::datastore ds(pheap::create_only, comm, tmp, opt);
    agreed(comm, [&] { with_weight_type(spec.weights, [&](auto w) { open_graph<typename decltype(w)::type>(ds, name, spec); }); });
    ds.flush();
  }
  agreed(comm, [&] {
    if (rank_of(comm) == 0) creation->publish();
  });
}

}  // namespace

pheap::mpi::datastore open_or_create(MPI_Comm comm, const std::string& path, const std::string& name,
                                     const graph_spec& spec, const pheap::options& opt) {
  namespace fs = std::filesystem;
  int state = 0;  // rank 0 looks: 0 absent, 1 distributed, 2 something else
  if (rank_of(comm) == 0) {
    std::error_code ec;
    state = !fs::exists(path, ec) ? 0 : fs::exists(fs::path(path) / pheap::mpi::manifest_file, ec) ? 1 : 2;
  }
  MPI_Bcast(&state, 1, MPI_INT, 0, comm);
  agreed(comm, [&] {
    if (state == 2 && rank_of(comm) == 0) {
      throw ingest_usage_error(path + " is not a distributed datastore (it has no " +
                               std::string(pheap::mpi::manifest_file) +
                               "): a datastore made by one process is ingested by one process (without "
                               "mpirun, or with -np 1); give mpirun a new path");
    }
  });
  if (state == 0) create_distributed(comm, path, name, spec, opt);
  return pheap::mpi::datastore(pheap::open_only, comm, path, opt);
}

distributed_report ingest(MPI_Comm comm, pheap::mpi::datastore& ds, const std::string& name, const graph_spec& spec,
                          const std::vector<std::string>& inputs, const ingest_options& opt,
                          const std::function<void(const ingest_progress&)>& progress) {
  return with_weight_type(spec.weights, [&](auto w) {
    using W = typename decltype(w)::type;
    persistent_graph<W>* g = nullptr;
    persistent_partition* part = nullptr;
    agreed(comm, [&] {
      g = &open_graph<W>(ds, name, spec);
      part = &partition_of(ds, name);
    });
    pheap::graph::detail::target_of<persistent_graph<W>, persistent_ingest_state> target(
        *g, *find_ingest_state(ds.local(), name), find_input_check(ds.local(), name));
    auto inserter = std::make_shared<routed_inserter>();
    distributed_run run(comm, ds, target, *part, g->directed(), inputs, opt,
                        [g, inserter](std::span<const routed> rs) { inserter->insert(*g, rs); }, progress);
    if (run.start()) {
      run.run_batches();
      run.finish_job();
    }
    return run.report();
  });
}

}  // namespace pheap::graph::mpi
