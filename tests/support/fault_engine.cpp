// The fault-injecting engine: wraps any engine, counts operations, applies fault rules and
// simulates power cuts. Test gear (target pheap_testing, never installed); used by the crash
// and power-cut tests of every layer.
//
// Counting (op_kind of each call). read: each read request. write: each write request.
// sync: sync(), each file of sync_files() (synced one after the other, in order) and
// sync_dir() (all durability points). metadata: open, create_dir,
// remove_file, remove_dir, rename, truncate, punch_hole, clone_file. exists, list_dir, size and
// allocated_bytes only look at metadata and are neither counted nor faulted. Every counted
// operation also counts under op_kind::any. Rules are matched against the count of their own
// kind; the first matching rule wins.
//
// Actions. fail_eio / fail_enospc: the operation throws (errc::io / errc::no_space, path and
// "injected" in the message) and has no effect; earlier requests of the same batch have been
// performed (a batch is not atomic). crash: requests of the batch before the faulted one are
// performed, then _exit(86). short_transfer: the request is performed as two inner transfers,
// the first covering half of the bytes, the second the rest — the caller sees one complete
// transfer, exactly what an engine must make of a short pread/pwrite or CQE. interrupt: the
// request is retried as if the syscall had returned EINTR having moved nothing, i.e. it is
// performed once, transparently. (The inner engines' own retry loops are exercised directly by
// the white-box tests of tests/io/.) On non-transfer operations short_transfer and interrupt
// are transparent as well.
//
// Power-cut model. Before each write, truncate and punch_hole the engine records an undo entry
// for the file (identified by device and inode, so renames and multiple opens do not matter):
// the old bytes of the affected range and the old file size, plus the new bytes of a write.
// A successful sync(f) forgets the entries of f's inode. power_cut():
//   1. rolls every file back, newest entry first, to its state at its last successful sync;
//   2. re-applies each entry in the original order per the policy: writes are written,
//      dropped, or (random only) torn = a random subset of their 512-byte sectors (sectors
//      aligned to file offsets); truncate and punch_hole are kept or dropped whole;
//   3. undoes names not yet made durable by sync_dir() of their directory: renames (newest
//      first; a replaced target is restored from a hidden hard link taken at rename time; a
//      renamed file that was itself created unsynced disappears), then files and directories
//      created since (a vanished directory takes its contents with it).
//   drop_all drops/undoes everything, keep_all keeps everything, random decides each entry,
//   rename and creation independently with a generator seeded by `seed`.
// Files opened with open_mode::direct are opened so by the inner engine too (its routing of
// aligned transfers to O_DIRECT is invisible here); pre-images and roll-backs use the file's
// buffered descriptor, so they need no alignment.
// Limits of the model: removals (remove_file/remove_dir) are durable at once and are never
// undone; a rename becomes durable with sync_dir() of the destination's directory alone;
// replacing a directory by rename cannot be undone (no backup of directories); data written
// by clone_file is synced by it and only its directory entry is tracked. Undo entries keep
// their bytes in memory until the next sync of their file, and writes are serialised (one
// engine-wide lock around pre-image capture and the write) — a test engine, not a fast one.
// After the cut every operation throws errc::io "power lost".
//
// Environment, read when the engine is constructed (kind = any|read|write|sync|metadata, n ≥ 1;
// a malformed value throws errc::invalid_argument naming the variable):
//   PHEAP_FAULT_CRASH_AT=<kind>:<n>          installs {kind, n, crash} — for crash campaigns
//       that run an unmodified program and kill it at its n-th operation of a kind.
//   PHEAP_FAULT_EIO_AT=<kind>:<n>[:sticky]   installs {kind, n, fail_eio, sticky}: the n-th
//       operation of the kind fails with EIO once (a transient error: a retry succeeds), or
//       with ":sticky" it and every later one of the kind fail (a persistently bad disk) — for
//       the read-error campaigns (e.g. "read:120:sticky" = every read from the 120th on).
//   PHEAP_FAULT_ENOSPC_AT=<kind>:<n>[:sticky] the same with fail_enospc (errc::no_space,
//       ENOSPC) — for the write-error campaigns (a full disk: "write:40:sticky").
//   Any of them may be set; they are installed in this order (crash, EIO, ENOSPC) and the
//   first matching rule wins.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <random>
#include <vector>

#include "fault_engine.hpp"
#include "base/posix_file.hpp"
#include "pheap/error.hpp"
#include "pheap/io.hpp"

namespace pheap::test {

using namespace pheap::io;

namespace {

constexpr std::size_t kSector = 512;
constexpr const char* kBackupPrefix = ".pheap-fault-backup-";

std::size_t kind_index(op_kind k) { return static_cast<std::size_t>(k); }

std::string normalize(const std::string& p) {
  std::string s = std::filesystem::absolute(p).lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

std::string parent_of(const std::string& normalized) {
  return std::filesystem::path(normalized).parent_path().string();
}

[[noreturn]] void throw_injected(fault_action a, const std::string& path, const std::string& op) {
  const int err = a == fault_action::fail_enospc ? ENOSPC : EIO;
  throw error(a == fault_action::fail_enospc ? errc::no_space : errc::io, path, op,
              std::string(std::strerror(err)) + " (injected by fault engine)", err);
}

// A descriptor of its own per open, so undo entries can roll a file back after the caller
// closed it (or after it was renamed or removed).
struct tracked_inode {
  dev_t dev;
  ino_t ino;
  int fd;
  std::string path;  // as opened; for messages only
  tracked_inode(dev_t d, ino_t i, int f, std::string p) : dev(d), ino(i), fd(f), path(std::move(p)) {}
  tracked_inode(const tracked_inode&) = delete;
  tracked_inode& operator=(const tracked_inode&) = delete;
  ~tracked_inode() {
    if (fd >= 0) ::close(fd);
  }
};

class fault_file final : public file {
 public:
  fault_file(std::unique_ptr<file> inner, std::shared_ptr<tracked_inode> t)
      : file(inner->path()), inner_(std::move(inner)), tracked_(std::move(t)) {}
  int fd() const noexcept override { return inner_->fd(); }
  bool direct() const noexcept override { return inner_->direct(); }
  file& inner() { return *inner_; }
  const std::shared_ptr<tracked_inode>& tracked() const { return tracked_; }

 private:
  std::unique_ptr<file> inner_;
  std::shared_ptr<tracked_inode> tracked_;
};

fault_file& as_fault(file& f, const char* op) {
  auto* p = dynamic_cast<fault_file*>(&f);
  if (p == nullptr) {
    throw error(errc::invalid_argument, f.path(), op, "file was not opened by this fault engine");
  }
  return *p;
}

enum class undo_kind { write, truncate, punch };

struct undo_entry {
  undo_kind kind;
  std::shared_ptr<tracked_inode> inode;
  std::uint64_t offset = 0;  // write/punch: start; truncate: new size
  std::uint64_t len = 0;     // write/punch: length
  std::uint64_t old_size = 0;
  std::vector<char> old_bytes;  // bytes of [offset, min(offset+len, old_size)) before the op;
                                // for a shrinking truncate: [new size, old size)
  std::vector<char> new_bytes;  // write only
};

struct created_entry {
  std::string path;  // normalized
  std::string parent;
  bool is_dir;
};

struct rename_entry {
  std::string from, to;  // normalized
  std::string to_parent;
  std::string backup;    // hard link to the replaced target, or empty
  bool source_created;   // the renamed file itself was created since its directory's last sync
};

// Parses "<kind>:<n>[:sticky]" of the variable `var` (sticky only when `allow_sticky`).
std::optional<fault_rule> rule_from_env(const char* var, fault_action action, bool allow_sticky) {
  const char* env = std::getenv(var);
  if (env == nullptr || *env == '\0') return std::nullopt;
  const std::string s = env;
  auto bad = [&]() -> error {
    return error(errc::invalid_argument, "", var,
                 std::string("expected <any|read|write|sync|metadata>:<n>") +
                     (allow_sticky ? "[:sticky]" : "") + " with n >= 1, got '" + s + "'");
  };
  const auto colon = s.find(':');
  if (colon == std::string::npos) throw bad();
  const std::string kind = s.substr(0, colon);
  fault_rule r;
  r.action = action;
  if (kind == "any") r.kind = op_kind::any;
  else if (kind == "read") r.kind = op_kind::read;
  else if (kind == "write") r.kind = op_kind::write;
  else if (kind == "sync") r.kind = op_kind::sync;
  else if (kind == "metadata") r.kind = op_kind::metadata;
  else throw bad();
  std::string num = s.substr(colon + 1);
  if (const auto c2 = num.find(':'); c2 != std::string::npos) {
    if (!allow_sticky || num.substr(c2 + 1) != "sticky") throw bad();
    r.sticky = true;
    num.resize(c2);
  }
  if (num.empty() || num.find_first_not_of("0123456789") != std::string::npos) throw bad();
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(num.c_str(), &end, 10);
  if (*end != '\0' || errno != 0 || n == 0) throw bad();
  r.nth = n;
  return r;
}

class fault_engine_impl final : public fault_engine {
 public:
  explicit fault_engine_impl(std::shared_ptr<engine> inner) : inner_(std::move(inner)) {
    if (!inner_) throw error(errc::invalid_argument, "", "make_fault_engine", "inner engine is null");
    if (auto r = rule_from_env("PHEAP_FAULT_CRASH_AT", fault_action::crash, false)) rules_.push_back(*r);
    if (auto r = rule_from_env("PHEAP_FAULT_EIO_AT", fault_action::fail_eio, true)) rules_.push_back(*r);
    if (auto r = rule_from_env("PHEAP_FAULT_ENOSPC_AT", fault_action::fail_enospc, true)) rules_.push_back(*r);
  }

  std::string name() const override { return "fault(" + inner_->name() + ")"; }

  // --- rules ---------------------------------------------------------------------------
  void add_rule(const fault_rule& rule) override {
    std::lock_guard<std::mutex> lock(mu_);
    rules_.push_back(rule);
  }
  void clear_rules() override {
    std::lock_guard<std::mutex> lock(mu_);
    rules_.clear();
  }
  std::uint64_t operations(op_kind kind) const override {
    std::lock_guard<std::mutex> lock(mu_);
    return counts_[kind_index(kind)];
  }

  // --- files and directories -------------------------------------------------------------
  std::unique_ptr<file> open(const std::string& path, open_mode mode) override {
    const auto act = begin_op(op_kind::metadata, path, "open");
    if (is_failure(act)) throw_injected(*act, path, "open");
    std::unique_ptr<file> f;
    bool created = false;
    const open_mode flags = is_direct(mode) ? open_mode::direct : open_mode::read_only;
    if (access_of(mode) == open_mode::create) {
      // create_new first, so we know whether this call brought the name into existence.
      try {
        f = inner_->open(path, open_mode::create_new | flags);
        created = true;
      } catch (const error& e) {
        if (e.code() != errc::already_exists) throw;
        f = inner_->open(path, open_mode::read_write | flags);
      }
    } else {
      f = inner_->open(path, mode);
      created = access_of(mode) == open_mode::create_new;
    }
    struct stat st {};
    if (::fstat(f->fd(), &st) != 0) throw_errno(errno, path, "open (fstat)");
    const int dup = ::fcntl(f->fd(), F_DUPFD_CLOEXEC, 0);
    if (dup < 0) throw_errno(errno, path, "open (dup)");
    auto t = std::make_shared<tracked_inode>(st.st_dev, st.st_ino, dup, path);
    if (created) note_created(path, false);
    return std::make_unique<fault_file>(std::move(f), std::move(t));
  }

  bool exists(const std::string& path) override {
    check_power(path, "exists");
    return inner_->exists(path);
  }

  void create_dir(const std::string& path) override {
    const auto act = begin_op(op_kind::metadata, path, "create_dir");
    if (is_failure(act)) throw_injected(*act, path, "create_dir");
    inner_->create_dir(path);
    note_created(path, true);
  }

  void remove_file(const std::string& path) override {
    const auto act = begin_op(op_kind::metadata, path, "remove_file");
    if (is_failure(act)) throw_injected(*act, path, "remove_file");
    inner_->remove_file(path);
    forget_created(path);
  }

  void remove_dir(const std::string& path) override {
    const auto act = begin_op(op_kind::metadata, path, "remove_dir");
    if (is_failure(act)) throw_injected(*act, path, "remove_dir");
    inner_->remove_dir(path);
    forget_created(path);
  }

  void rename(const std::string& from, const std::string& to) override {
    const auto act = begin_op(op_kind::metadata, from, "rename to " + to);
    if (is_failure(act)) throw_injected(*act, from, "rename to " + to);
    std::lock_guard<std::mutex> wlock(wmu_);
    check_power(from, "rename");
    rename_entry r;
    r.from = normalize(from);
    r.to = normalize(to);
    r.to_parent = parent_of(r.to);
    // Keep the replaced target reachable so a power cut can bring it back.
    const std::string backup =
        r.to_parent + "/" + kBackupPrefix + std::to_string(backup_seq_++);
    if (::link(r.to.c_str(), backup.c_str()) == 0) r.backup = backup;
    try {
      inner_->rename(from, to);
    } catch (...) {
      if (!r.backup.empty()) ::unlink(r.backup.c_str());
      throw;
    }
    std::lock_guard<std::mutex> lock(mu_);
    r.source_created = false;
    for (auto it = created_.begin(); it != created_.end(); ++it) {
      if (!it->is_dir && it->path == r.from) {
        r.source_created = true;
        created_.erase(it);
        break;
      }
    }
    renames_.push_back(std::move(r));
  }

  std::vector<std::string> list_dir(const std::string& path) override {
    check_power(path, "list_dir");
    auto names = inner_->list_dir(path);
    std::erase_if(names, [](const std::string& n) { return n.rfind(kBackupPrefix, 0) == 0; });
    return names;
  }

  void sync_dir(const std::string& path) override {
    const auto act = begin_op(op_kind::sync, path, "sync_dir");
    if (is_failure(act)) throw_injected(*act, path, "sync_dir");
    inner_->sync_dir(path);
    const std::string dir = normalize(path);
    std::vector<std::string> backups;
    {
      std::lock_guard<std::mutex> lock(mu_);
      std::erase_if(created_, [&](const created_entry& c) { return c.parent == dir; });
      std::erase_if(renames_, [&](const rename_entry& r) {
        if (r.to_parent != dir) return false;
        if (!r.backup.empty()) backups.push_back(r.backup);
        return true;
      });
    }
    for (const auto& b : backups) ::unlink(b.c_str());
  }

  // --- data ------------------------------------------------------------------------------
  void read(std::span<const read_request> batch) override {
    std::vector<read_request> run;
    auto flush = [&] {
      if (!run.empty()) inner_->read(run);
      run.clear();
    };
    for (const auto& r : batch) {
      fault_file& ff = as_fault(*r.f, "read");
      const read_request ir{&ff.inner(), r.offset, r.buf, r.len};
      const auto act = begin_op(op_kind::read, r.f->path(), "read");
      if (!act) {
        run.push_back(ir);
        continue;
      }
      flush();
      switch (*act) {
        case fault_action::crash: _exit(86);
        case fault_action::fail_eio:
        case fault_action::fail_enospc:
          throw_injected(*act, r.f->path(), "read at offset " + std::to_string(r.offset));
        case fault_action::short_transfer: {
          const std::size_t first = r.len / 2;
          auto* p = static_cast<char*>(r.buf);
          inner_->read_at(ff.inner(), r.offset, p, first);
          inner_->read_at(ff.inner(), r.offset + first, p + first, r.len - first);
          break;
        }
        case fault_action::interrupt:
          inner_->read(std::span<const read_request>(&ir, 1));
          break;
      }
    }
    flush();
  }

  void write(std::span<const write_request> batch) override {
    std::vector<const write_request*> run;
    auto flush = [&] {
      if (!run.empty()) write_logged(run, false);
      run.clear();
    };
    for (const auto& w : batch) {
      as_fault(*w.f, "write");
      const auto act = begin_op(op_kind::write, w.f->path(), "write");
      if (!act) {
        run.push_back(&w);
        continue;
      }
      flush();
      switch (*act) {
        case fault_action::crash: _exit(86);
        case fault_action::fail_eio:
        case fault_action::fail_enospc:
          throw_injected(*act, w.f->path(), "write at offset " + std::to_string(w.offset));
        case fault_action::short_transfer:
          write_logged({&w}, true);
          break;
        case fault_action::interrupt:
          write_logged({&w}, false);
          break;
      }
    }
    flush();
  }

  void sync(file& f) override {
    fault_file& ff = as_fault(f, "sync");
    const auto act = begin_op(op_kind::sync, f.path(), "sync");
    if (is_failure(act)) throw_injected(*act, f.path(), "sync");
    std::lock_guard<std::mutex> wlock(wmu_);
    check_power(f.path(), "sync");
    inner_->sync(ff.inner());
    std::lock_guard<std::mutex> lock(mu_);
    const auto& t = *ff.tracked();
    std::erase_if(log_, [&](const undo_entry& e) {
      return e.inode->dev == t.dev && e.inode->ino == t.ino;
    });
  }

  std::uint64_t size(file& f) override {
    check_power(f.path(), "size");
    return inner_->size(as_fault(f, "size").inner());
  }

  void truncate(file& f, std::uint64_t new_size) override {
    fault_file& ff = as_fault(f, "truncate");
    const auto act = begin_op(op_kind::metadata, f.path(), "truncate");
    if (is_failure(act)) throw_injected(*act, f.path(), "truncate to " + std::to_string(new_size));
    std::lock_guard<std::mutex> wlock(wmu_);
    check_power(f.path(), "truncate");
    undo_entry e{undo_kind::truncate, ff.tracked()};
    e.offset = new_size;
    e.old_size = inner_->size(ff.inner());
    if (new_size < e.old_size) {
      e.old_bytes.resize(static_cast<std::size_t>(e.old_size - new_size));
      inner_->read_at(ff.inner(), new_size, e.old_bytes.data(), e.old_bytes.size());
    }
    inner_->truncate(ff.inner(), new_size);
    append_log(std::move(e));
  }

  void punch_hole(file& f, std::uint64_t offset, std::uint64_t len) override {
    fault_file& ff = as_fault(f, "punch_hole");
    const auto act = begin_op(op_kind::metadata, f.path(), "punch_hole");
    if (is_failure(act)) throw_injected(*act, f.path(), "punch_hole at " + std::to_string(offset));
    std::lock_guard<std::mutex> wlock(wmu_);
    check_power(f.path(), "punch_hole");
    undo_entry e{undo_kind::punch, ff.tracked()};
    e.offset = offset;
    e.len = len;
    e.old_size = inner_->size(ff.inner());
    capture_old(e, ff.inner());
    inner_->punch_hole(ff.inner(), offset, len);
    append_log(std::move(e));
  }

  std::uint64_t allocated_bytes(file& f) override {
    check_power(f.path(), "allocated_bytes");
    return inner_->allocated_bytes(as_fault(f, "allocated_bytes").inner());
  }

  bool clone_file(const std::string& src, const std::string& dst) override {
    const auto act = begin_op(op_kind::metadata, src, "clone_file to " + dst);
    if (is_failure(act)) throw_injected(*act, src, "clone_file to " + dst);
    const bool reflinked = inner_->clone_file(src, dst);
    note_created(dst, false);
    return reflinked;
  }

  // --- power cut -------------------------------------------------------------------------
  void power_cut(cut_policy policy, std::uint64_t seed) override {
    std::lock_guard<std::mutex> wlock(wmu_);
    std::vector<undo_entry> log;
    std::vector<rename_entry> renames;
    std::vector<created_entry> created;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (power_lost_) throw power_lost("", "power_cut");
      power_lost_ = true;
      log.swap(log_);
      renames.swap(renames_);
      created.swap(created_);
    }
    std::mt19937_64 rng(seed);
    auto coin = [&] { return (rng() & 1u) != 0; };

    // 1. Back to the last synced state of every file.
    for (auto it = log.rbegin(); it != log.rend(); ++it) rollback(*it);
    // 2. Re-apply what the policy lets through.
    for (const auto& e : log) {
      if (e.kind == undo_kind::write) {
        int fate = 0;  // 0 written, 1 dropped, 2 torn
        if (policy == cut_policy::drop_all) fate = 1;
        if (policy == cut_policy::random) fate = static_cast<int>(rng() % 3);
        if (fate == 0) reapply_write(e, nullptr);
        if (fate == 2) reapply_write(e, &rng);
      } else {
        const bool keep = policy == cut_policy::keep_all || (policy == cut_policy::random && coin());
        if (keep) reapply_meta(e);
      }
    }
    // 3. Names not made durable by sync_dir().
    for (auto it = renames.rbegin(); it != renames.rend(); ++it) {
      const bool undo = policy == cut_policy::drop_all || (policy == cut_policy::random && coin());
      if (undo) {
        if (it->source_created) {
          ::unlink(it->to.c_str());
        } else {
          ::rename(it->to.c_str(), it->from.c_str());
        }
        if (!it->backup.empty()) ::rename(it->backup.c_str(), it->to.c_str());
      } else if (!it->backup.empty()) {
        ::unlink(it->backup.c_str());
      }
    }
    for (auto it = created.rbegin(); it != created.rend(); ++it) {
      const bool vanish = policy == cut_policy::drop_all || (policy == cut_policy::random && coin());
      if (!vanish) continue;
      std::error_code ec;
      std::filesystem::remove_all(it->path, ec);
    }
  }

 private:
  static bool is_failure(const std::optional<fault_action>& a) {
    return a && (*a == fault_action::fail_eio || *a == fault_action::fail_enospc);
  }

  static error power_lost(const std::string& path, const std::string& op) {
    return error(errc::io, path, op, "power lost (fault engine power_cut)", EIO);
  }

  void check_power(const std::string& path, const std::string& op) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (power_lost_) throw power_lost(path, op);
  }

  // Counts one operation and returns the action of the first matching rule. A crash rule
  // exits here unless the caller must first complete earlier requests of a batch (transfers
  // handle crash themselves).
  std::optional<fault_action> begin_op(op_kind k, const std::string& path, const std::string& op) {
    std::optional<fault_action> act;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (power_lost_) throw power_lost(path, op);
      const std::uint64_t n_any = ++counts_[kind_index(op_kind::any)];
      const std::uint64_t n_kind = ++counts_[kind_index(k)];
      for (const auto& r : rules_) {
        if (r.nth == 0) continue;
        if (r.kind != op_kind::any && r.kind != k) continue;
        const std::uint64_t n = r.kind == op_kind::any ? n_any : n_kind;
        if (n == r.nth || (r.sticky && n > r.nth)) {
          act = r.action;
          break;
        }
      }
    }
    if (act == fault_action::crash && k != op_kind::read && k != op_kind::write) _exit(86);
    return act;
  }

  void note_created(const std::string& path, bool is_dir) {
    created_entry c{normalize(path), "", is_dir};
    c.parent = parent_of(c.path);
    std::lock_guard<std::mutex> lock(mu_);
    created_.push_back(std::move(c));
  }

  void forget_created(const std::string& path) {
    const std::string p = normalize(path);
    std::lock_guard<std::mutex> lock(mu_);
    std::erase_if(created_, [&](const created_entry& c) { return c.path == p; });
  }

  void append_log(undo_entry e) {
    std::lock_guard<std::mutex> lock(mu_);
    log_.push_back(std::move(e));
  }

  // Fills e.old_bytes with the current bytes of [offset, min(offset+len, old_size)).
  void capture_old(undo_entry& e, file& inner) {
    if (e.offset >= e.old_size) return;
    const std::uint64_t end = std::min(e.offset + e.len, e.old_size);
    e.old_bytes.resize(static_cast<std::size_t>(end - e.offset));
    inner_->read_at(inner, e.offset, e.old_bytes.data(), e.old_bytes.size());
  }

  // Records the undo entries of `reqs` and performs them through the inner engine; `split`
  // performs each as two halves (short_transfer). Holds wmu_ so pre-image and write are one
  // step with respect to other writers, truncates and syncs.
  void write_logged(const std::vector<const write_request*>& reqs, bool split) {
    std::lock_guard<std::mutex> wlock(wmu_);
    check_power(reqs.front()->f->path(), "write");
    std::vector<undo_entry> entries;
    std::vector<write_request> inner_reqs;
    entries.reserve(reqs.size());
    inner_reqs.reserve(reqs.size());
    for (const auto* w : reqs) {
      fault_file& ff = as_fault(*w->f, "write");
      undo_entry e{undo_kind::write, ff.tracked()};
      e.offset = w->offset;
      e.len = w->len;
      e.old_size = inner_->size(ff.inner());
      capture_old(e, ff.inner());
      const auto* p = static_cast<const char*>(w->buf);
      e.new_bytes.assign(p, p + w->len);
      entries.push_back(std::move(e));
      inner_reqs.push_back(write_request{&ff.inner(), w->offset, w->buf, w->len});
    }
    // Logged before writing: after a failed (partial) write the pre-image is still right.
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& e : entries) log_.push_back(std::move(e));
    }
    if (!split) {
      inner_->write(inner_reqs);
      return;
    }
    for (const auto& w : inner_reqs) {
      const std::size_t first = w.len / 2;
      const auto* p = static_cast<const char*>(w.buf);
      inner_->write_at(*w.f, w.offset, p, first);
      inner_->write_at(*w.f, w.offset + first, p + first, w.len - first);
    }
  }

  // Restores the state just before `e`. Applied newest first, this yields the state before the
  // oldest entry, i.e. the last synced state. Errors are ignored: the simulation is best effort
  // on an inode that may have been removed meanwhile.
  static void rollback(const undo_entry& e) {
    const int fd = e.inode->fd;
    try {
      if (e.kind == undo_kind::truncate) {
        if (::ftruncate(fd, static_cast<off_t>(e.old_size)) != 0) return;
        if (!e.old_bytes.empty()) {
          pwrite_full(fd, e.inode->path, e.offset, e.old_bytes.data(), e.old_bytes.size());
        }
        return;
      }
      if (!e.old_bytes.empty()) {
        pwrite_full(fd, e.inode->path, e.offset, e.old_bytes.data(), e.old_bytes.size());
      }
      if (::ftruncate(fd, static_cast<off_t>(e.old_size)) != 0) return;
    } catch (const error&) {
    }
  }

  // Writes e.new_bytes again; with `rng`, only a random subset of its sectors (torn write).
  static void reapply_write(const undo_entry& e, std::mt19937_64* rng) {
    const int fd = e.inode->fd;
    try {
      if (rng == nullptr) {
        pwrite_full(fd, e.inode->path, e.offset, e.new_bytes.data(), e.new_bytes.size());
        return;
      }
      std::uint64_t pos = e.offset;
      const std::uint64_t end = e.offset + e.len;
      while (pos < end) {
        const std::uint64_t sector_end = std::min(end, (pos / kSector + 1) * kSector);
        if (((*rng)() & 1u) != 0) {
          pwrite_full(fd, e.inode->path, pos, e.new_bytes.data() + (pos - e.offset),
                              static_cast<std::size_t>(sector_end - pos));
        }
        pos = sector_end;
      }
    } catch (const error&) {
    }
  }

  static void reapply_meta(const undo_entry& e) {
    const int fd = e.inode->fd;
    if (e.kind == undo_kind::truncate) {
      if (::ftruncate(fd, static_cast<off_t>(e.offset)) != 0) return;
    } else if (e.len > 0) {
      if (::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(e.offset),
                      static_cast<off_t>(e.len)) != 0) {
        return;
      }
    }
  }

  std::shared_ptr<engine> inner_;
  mutable std::mutex mu_;  // rules, counters, logs, power_lost_; never held across I/O
  std::mutex wmu_;         // serialises write-side operations with their undo capture
  std::vector<fault_rule> rules_;
  std::array<std::uint64_t, 5> counts_{};
  std::vector<undo_entry> log_;
  std::vector<created_entry> created_;
  std::vector<rename_entry> renames_;
  std::uint64_t backup_seq_ = 0;
  bool power_lost_ = false;
};

}  // namespace

std::shared_ptr<fault_engine> make_fault_engine(std::shared_ptr<engine> inner) {
  return std::make_shared<fault_engine_impl>(std::move(inner));
}

}  // namespace pheap::test
