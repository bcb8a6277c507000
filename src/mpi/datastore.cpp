// pheap::mpi::datastore: create/open/remove of a distributed datastore and the collective
// flush, the protocol of FORMAT.md (this folder) in named steps.
#include "pheap/mpi/datastore.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <vector>

#include "mpi/collective.hpp"
#include "mpi/manifest_io.hpp"
#include "mpi/step_hook.hpp"
#include "pheap/error.hpp"
#include "pheap/two_phase.hpp"

namespace pheap::mpi {

namespace detail {
namespace {
step_hook g_hook = nullptr;
}
void set_step_hook(step_hook hook) noexcept { g_hook = hook; }
}  // namespace detail

using detail::flush_step;
using detail::on_all;

namespace {

// What a rank sends rank 0 after step 1 of the flush: its prepared epoch, or 0 and why not.
struct prepare_vote {
  std::uint64_t epoch = 0;
  std::int32_t code = 0;
  std::int32_t pad = 0;
};

// What rank 0 tells every rank after step 2.
struct flush_outcome {
  enum : std::int32_t { committed, rank_not_prepared, manifest_failed } status = committed;
  std::int32_t rank = 0;
  std::int32_t code = 0;
  char text[500] = {};
};

// This rank's entry for the manifest: its datastore's epoch and uuid, as 24 bytes.
struct entry_wire {
  std::uint64_t epoch;
  uuid id;
};
static_assert(sizeof(entry_wire) == 24);

}  // namespace

struct datastore::state {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 0;
  std::string path;
  bool ro = false;
  bool poisoned = false;  // a flush failed: the job is at man.epoch; reopen to continue
  manifest man;           // rank 0: every entry; other ranks: the global epoch and their own
  std::optional<manager> local;  // set by every constructor
  std::shared_ptr<io::engine> eng;  // the manifest's I/O (options::engine or the default)

  state(MPI_Comm c, const std::string& p, bool read_only) : path(p), ro(read_only) {
    MPI_Comm_dup(c, &comm);  // our collectives never match the program's own messages
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
  }
  ~state() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm);
  }

  void step(flush_step st, std::uint64_t g) const {
    if (detail::g_hook) detail::g_hook(st, rank, g);
  }

  // The manifest entries (epoch and uuid of each rank's datastore `m`): every entry on rank
  // 0, this rank's own elsewhere.
  std::vector<rank_entry> gather_entries(const manager& m) const {
    entry_wire mine{m.epoch(), detail::parse_uuid(m.get_uuid(), m.path())};
    std::vector<entry_wire> all(rank == 0 ? size : 0);
    MPI_Gather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, 0, comm);
    std::vector<rank_entry> out(static_cast<std::size_t>(size));
    out[static_cast<std::size_t>(rank)] = {mine.epoch, mine.id};
    for (std::size_t r = 0; r < all.size(); ++r) out[r] = {all[r].epoch, all[r].id};
    return out;
  }

  // Rank 0 makes the directory `dir` (absent or empty) for a new distributed datastore.
  void make_root(const std::string& dir, const char* op) {
    on_all(comm, dir, op, [&] {
      if (rank != 0) return;
      std::error_code ec;
      if (std::filesystem::exists(dir, ec) && !std::filesystem::is_empty(dir, ec)) {
        throw error(errc::already_exists, dir, op, "the directory exists and is not empty");
      }
      std::filesystem::create_directories(dir, ec);
      if (ec) throw_errno(ec.value(), dir, op);
    });
  }

  // ---- the collective flush, in its named steps (FORMAT.md "Collective flush") ----------

  // Step 1: this rank's writes become durable as a prepared local epoch. The vote carries it,
  // or 0 and the error code when this rank cannot (then `failure` holds why).
  prepare_vote prepare_local(std::exception_ptr& failure) {
    prepare_vote v;
    try {
      if (poisoned) {
        throw error(errc::poisoned, path, "flush",
                    "an earlier flush failed; the job is at global epoch " + std::to_string(man.epoch) +
                        ": reopen the distributed datastore to continue");
      }
      v.epoch = two_phase::prepare(*local);
    } catch (const error& e) {
      failure = std::current_exception();
      v.code = static_cast<std::int32_t>(e.code());
    } catch (...) {
      failure = std::current_exception();
      v.code = static_cast<std::int32_t>(errc::io);
    }
    return v;
  }

  // Step 2 (rank 0): every rank prepared → write and sync the manifest of global epoch g in
  // the slot g-1 does not use. This is the commit point of the whole job.
  flush_outcome commit_global(std::uint64_t g, const std::vector<prepare_vote>& votes) {
    flush_outcome o;
    for (std::size_t r = 0; r < votes.size(); ++r) {
      if (votes[r].epoch == 0) {
        o.status = flush_outcome::rank_not_prepared;
        o.rank = static_cast<std::int32_t>(r);
        o.code = votes[r].code;
        return o;
      }
    }
    manifest next = man;
    next.epoch = g;
    for (std::size_t r = 0; r < votes.size(); ++r) next.ranks[r].epoch = votes[r].epoch;
    try {
      detail::commit_manifest(*eng, path, next);
    } catch (const std::exception& e) {
      o.status = flush_outcome::manifest_failed;
      o.code = static_cast<std::int32_t>(errc::io);
      if (auto* pe = dynamic_cast<const error*>(&e)) o.code = static_cast<std::int32_t>(pe->code());
      std::strncpy(o.text, e.what(), sizeof o.text - 1);
      return o;
    }
    man = std::move(next);
    step(flush_step::committed, g);
    return o;
  }

  // Steps 1→3 as messages: gather the votes at rank 0, which commits or not, then broadcast
  // the outcome. Throws on every rank when the global epoch was not committed.
  void agree_commit(std::uint64_t g, prepare_vote mine, std::exception_ptr failure) {
    std::vector<prepare_vote> votes(rank == 0 ? size : 0);
    MPI_Gather(&mine, sizeof mine, MPI_BYTE, votes.data(), sizeof mine, MPI_BYTE, 0, comm);
    flush_outcome o;
    if (rank == 0) o = commit_global(g, votes);
    MPI_Bcast(&o, sizeof o, MPI_BYTE, 0, comm);
    if (o.status == flush_outcome::committed) {
      if (rank != 0) {
        man.epoch = g;
        man.ranks[static_cast<std::size_t>(rank)].epoch = mine.epoch;
        step(flush_step::committed, g);
      }
      return;
    }
    poisoned = true;  // prepared ranks cannot prepare again; the next open discards it
    if (failure) std::rethrow_exception(failure);
    const std::string stays = "; the job stays at global epoch " + std::to_string(man.epoch) +
                              " (reopen to continue)";
    if (o.status == flush_outcome::rank_not_prepared) {
      throw error(static_cast<errc>(o.code), path, "flush",
                  "rank " + std::to_string(o.rank) + " could not prepare global epoch " + std::to_string(g) + stays);
    }
    throw error(static_cast<errc>(o.code), path, "flush", "rank 0 could not write the manifest: " +
                                                              std::string(o.text) + stays);
  }

  // Step 4: the global epoch is committed; this rank makes its prepared epoch its watermark.
  // A failure here loses nothing: the next open confirms the epoch the manifest names.
  void confirm_local(std::uint64_t g) {
    try {
      two_phase::confirm(*local);
    } catch (const error& e) {
      poisoned = true;
      throw error(e.code(), local->path(), "flush",
                  "global epoch " + std::to_string(g) + " is committed but this rank could not confirm it "
                  "(the next open does): " + e.what());
    }
  }
};

datastore::datastore(create_only_t, MPI_Comm comm, const std::string& path, const options& opt)
    : s_(std::make_unique<state>(comm, path, false)) {
  state& s = *s_;
  s.eng = detail::engine_of(opt);
  s.make_root(path, "create distributed datastore");
  on_all(s.comm, path, "create rank datastore", [&] { s.local = two_phase::create(rank_dir(path, s.rank), opt); });
  s.man.ranks = s.gather_entries(*s.local);
  s.man.epoch = 1;
  on_all(s.comm, path, "create manifest", [&] {
    if (s.rank != 0) return;
    s.man.job = detail::new_uuid();
    detail::create_manifest(*s.eng, path, s.man);
  });
}

namespace {
void open_this_rank(datastore::state& s, const options& opt) {
  s.man = read_manifest(s.path, s.eng);
  if (s.man.ranks.size() != static_cast<std::size_t>(s.size)) {
    throw error(errc::invalid_argument, s.path, "open distributed datastore",
                "created with " + std::to_string(s.man.ranks.size()) + " ranks, opened by a job of " +
                    std::to_string(s.size) + " (restart with the same number of ranks)");
  }
  s.local = open_rank(s.path, s.man, s.rank, s.ro, opt);
}

void open_state(datastore::state& s, const options& opt) {
  s.eng = detail::engine_of(opt);
  on_all(s.comm, s.path, "open distributed datastore", [&] { open_this_rank(s, opt); });
}

// Read-only, perhaps beside a running job (FORMAT.md "Readers beside a running job"): each
// rank reads the manifest and registers at its local epoch; then one reduction says whether
// every rank opened and whether all read the same global epoch. Ranks that read different
// manifests (a commit between their reads), or a failure while the manifest moved on (a rank
// confirmed a newer global epoch before this one registered), close and try again, all of
// them; any other failure is agreed and thrown as by open_state.
void open_state_read_only(datastore::state& s, const options& opt) {
  s.eng = detail::engine_of(opt);
  std::uint64_t first = 0;
  for (int attempt = 1;; ++attempt) {
    std::exception_ptr failure;
    s.man = manifest{};
    try {
      open_this_rank(s, opt);
    } catch (...) {
      failure = std::current_exception();
      s.local.reset();
    }
    // max over ranks of: failed, the global epoch read, its complement (the min); a rank that
    // could not read the manifest (epoch 0) counts in neither.
    const std::uint64_t g = s.man.epoch;
    const std::uint64_t mine[3] = {failure ? 1u : 0u, g, g ? ~g : 0};
    std::uint64_t all[3] = {};
    MPI_Allreduce(mine, all, 3, MPI_UINT64_T, MPI_MAX, s.comm);
    const std::uint64_t hi = all[1], lo = all[2] ? ~all[2] : 0;
    if (attempt == 1) first = lo;
    const bool split = lo != hi;
    if (!all[0] && !split) return;
    // Whether the job moved past what the ranks read: rank 0 looks, every rank follows it.
    int moved = split;
    if (!split && s.rank == 0) moved = detail::manifest_moved(s.path, s.eng, hi);
    MPI_Bcast(&moved, 1, MPI_INT, 0, s.comm);
    if (!moved) detail::agree(s.comm, failure, s.path, "open distributed datastore");  // throws
    s.local.reset();
    if (attempt == detail::reader_open_attempts) detail::throw_outpaced(s.path, first, hi);
  }
}
}  // namespace

datastore::datastore(open_only_t, MPI_Comm comm, const std::string& path, const options& opt)
    : s_(std::make_unique<state>(comm, path, false)) {
  open_state(*s_, opt);
}

datastore::datastore(open_read_only_t, MPI_Comm comm, const std::string& path, const options& opt)
    : s_(std::make_unique<state>(comm, path, true)) {
  open_state_read_only(*s_, opt);
}

datastore::~datastore() = default;

manager& datastore::local() noexcept { return *s_->local; }
int datastore::rank() const noexcept { return s_->rank; }
int datastore::size() const noexcept { return s_->size; }
const std::string& datastore::path() const noexcept { return s_->path; }
std::uint64_t datastore::epoch() const noexcept { return s_->man.epoch; }

// The collective flush (FORMAT.md "Collective flush"): begin → prepare → agree and commit the
// manifest at rank 0 → confirm.
std::uint64_t datastore::flush() {
  state& s = *s_;
  if (s.ro) throw error(errc::read_only, s.path, "flush", "the distributed datastore is open read-only");
  const std::uint64_t g = s.man.epoch + 1;
  s.step(flush_step::begin, g);
  std::exception_ptr failure;
  const prepare_vote mine = s.prepare_local(failure);
  if (!failure) s.step(flush_step::prepared, g);
  s.agree_commit(g, mine, failure);
  s.confirm_local(g);
  s.step(flush_step::confirmed, g);
  return g;
}

std::uint64_t datastore::snapshot(const std::string& dst) {
  state& s = *s_;
  const std::uint64_t g = s.ro ? s.man.epoch : flush();
  s.make_root(dst, "snapshot");
  const std::string mine = rank_dir(dst, s.rank);
  std::optional<manager> c;  // the copy: its own uuid and epoch go into the new manifest
  on_all(s.comm, dst, "snapshot rank datastore", [&] {
    s.local->snapshot(mine);
    c.emplace(two_phase::open(mine, ~std::uint64_t{0}, true));
  });
  manifest copy;
  copy.ranks = s.gather_entries(*c);
  c.reset();
  copy.epoch = g;
  on_all(s.comm, dst, "snapshot manifest", [&] {
    if (s.rank != 0) return;
    copy.job = detail::new_uuid();
    detail::create_manifest(*s.eng, dst, copy);
  });
  return g;
}

void datastore::remove(MPI_Comm comm, const std::string& path) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::uint64_t ranks = 0;
  const std::shared_ptr<io::engine> eng = io::default_engine();
  on_all(comm, path, "remove distributed datastore", [&] {
    if (rank != 0) return;
    ranks = read_manifest(path, eng).ranks.size();
    detail::remove_manifest(*eng, path);
  });
  MPI_Bcast(&ranks, 1, MPI_UINT64_T, 0, comm);
  on_all(comm, path, "remove rank datastores", [&] {
    for (std::uint64_t r = static_cast<std::uint64_t>(rank); r < ranks; r += static_cast<std::uint64_t>(size)) {
      manager::remove(rank_dir(path, static_cast<int>(r)));
    }
  });
  on_all(comm, path, "remove distributed datastore", [&] {
    if (rank != 0) return;
    eng->remove_dir(path);
  });
}

}  // namespace pheap::mpi
