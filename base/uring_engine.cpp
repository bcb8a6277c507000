// The io_uring engine (liburing): batched reads and writes with deep queues.
//
// Rings. The engine owns a small pool of rings guarded by a mutex. A read()/write() call
// leases one ring for its whole duration (so a ring is only ever driven by one thread at a
// time), and returns it when done. The pool grows on demand up to max_rings(), i.e. to the
// number of threads that transfer at the same time; beyond that, callers wait for a free ring.
// Rings die with the engine, never with a thread, so neither thread exit nor engine
// destruction leaks one. After fork(), the child discards the inherited rings (their memory is
// shared with the parent) and creates its own.
//
// Batches. A batch becomes a list of operations; up to `queue_depth` of them are in flight at
// once, the rest are staged as completions free slots. A completion with -EINTR/-EAGAIN is
// resubmitted as is; a short transfer resubmits the remainder; a read that hits end of file
// (res == 0 before len) zero-fills the rest of its buffer. On the first hard error the engine
// stops staging new operations, drains everything already in flight (the kernel must be done
// with the caller's buffers before we return), and throws for the failed request.
//
// A batch of one read or write is a plain pread/pwrite (file_pread/file_pwrite, as the posix
// engine): one request gains nothing from a ring, and on a file the kernel cannot read
// without blocking through IOCB_NOWAIT (tmpfs, many buffered files) io_uring hands the request
// to an io-wq worker thread: a 4 KiB read fault on a /dev/shm store cost 35.8 µs through the
// ring, 9.6 µs with pread (bench/pager/fault_bench.cpp, in_core_warm). The pager's faults
// are such batches; its prefetch, eviction and flush batches use the ring.
//
// sync() is a plain fdatasync(2) (inherited from fs_engine): one request gains nothing from a
// ring round trip, and a synchronous call keeps the error attribution obvious. sync_files()
// of several files submits all their fdatasyncs at once.
#include <liburing.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "posix_file.hpp"
#include "pheap/error.hpp"

namespace pheap::io {

namespace {

constexpr std::size_t kMaxRings = 64;

// A ring is a descriptor the pool keeps for the engine's lifetime: under a low RLIMIT_NOFILE
// the pool may take at most an eighth of the descriptors above 64 (at least one ring), so
// rings created in a burst of concurrent transfers do not starve the files they transfer.
std::size_t max_rings() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return kMaxRings;
  if (lim.rlim_cur <= 64 + 8) return 1;
  return std::min<std::size_t>(kMaxRings, static_cast<std::size_t>(lim.rlim_cur - 64) / 8);
}
// Upper bound of one SQE's length: the kernel caps a single transfer below 2 GiB anyway; larger
// requests simply take several rounds.
constexpr std::size_t kMaxChunk = std::size_t{1} << 30;

class ring {
 public:
  explicit ring(unsigned depth) {
    const int rc = io_uring_queue_init(depth, &r_, 0);
    if (rc < 0) {
      throw error(errc::unavailable, "", "io_uring_queue_init",
                  std::string(std::strerror(-rc)) + " (queue depth " + std::to_string(depth) + ")",
                  -rc);
    }
  }
  ~ring() { io_uring_queue_exit(&r_); }
  ring(const ring&) = delete;
  ring& operator=(const ring&) = delete;

  io_uring* get() { return &r_; }
  unsigned depth() const { return r_.sq.ring_entries; }

  // Set when the ring may hold staged or in-flight work we could not account for; such a ring
  // is destroyed instead of going back to the pool.
  bool broken = false;

 private:
  io_uring r_{};
};

// Submits one NOP and waits for it, so an engine is only handed out when the kernel really
// executes ring requests (some sandboxes allow setup but refuse or stall submissions).
void probe(ring& rg) {
  io_uring_sqe* sqe = io_uring_get_sqe(rg.get());
  io_uring_prep_nop(sqe);
  int rc = io_uring_submit(rg.get());
  if (rc < 0) {
    throw error(errc::unavailable, "", "io_uring_submit (probe)", std::strerror(-rc), -rc);
  }
  io_uring_cqe* cqe = nullptr;
  do {
    rc = io_uring_wait_cqe(rg.get(), &cqe);
  } while (rc == -EINTR);
  if (rc < 0) throw error(errc::unavailable, "", "io_uring_wait_cqe (probe)", std::strerror(-rc), -rc);
  const int res = cqe->res;
  io_uring_cqe_seen(rg.get(), cqe);
  if (res < 0) throw error(errc::unavailable, "", "io_uring nop (probe)", std::strerror(-res), -res);
}

// One request of a batch as it progresses. A direct-mode file's request runs on the route
// the file gives it (posix_file::route_for): the O_DIRECT descriptor, possibly through an
// aligned bounce buffer (`user` is then the caller's buffer), or the buffered descriptor; a
// short direct transfer continues on the buffered descriptor (`buffered_fd`).
enum class op_kind { read, write, fsync };

struct op {
  int fd;
  int buffered_fd;
  const std::string* path;
  char* buf;
  std::size_t len;
  std::uint64_t offset;
  std::size_t done = 0;
  char* user = nullptr;  // bounced: copy back here (reads) after completion
  aligned_buffer bounce;
};

op make_op(posix_file& f, std::uint64_t offset, void* buf, std::size_t len, bool is_write) {
  const auto r = f.route_for(offset, buf, len);
  op o{r.fd, f.fd(), &f.path(), static_cast<char*>(buf), len, offset};
  if (r.bounce) {
    o.bounce = aligned_buffer(f.mem_align(), len);
    if (is_write) std::memcpy(o.bounce.data(), buf, len);
    o.user = o.buf;
    o.buf = reinterpret_cast<char*>(o.bounce.data());
  }
  return o;
}

class uring_engine final : public fs_engine {
 public:
  explicit uring_engine(unsigned depth) : depth_(depth), pid_(::getpid()) {
    if (depth == 0) {
      throw error(errc::invalid_argument, "", "make_uring_engine", "queue depth must be > 0");
    }
    auto first = std::make_unique<ring>(depth);
    probe(*first);
    free_.push_back(std::move(first));
    created_ = 1;
  }

  std::string name() const override { return "io_uring"; }

  void read(std::span<const read_request> batch) override {
    if (batch.empty()) return;
    if (batch.size() == 1) {
      const read_request& r = batch.front();
      file_pread(as_posix(*r.f, "read"), r.offset, r.buf, r.len);
      return;
    }
    std::vector<op> ops;
    ops.reserve(batch.size());
    for (const auto& r : batch) {
      ops.push_back(make_op(as_posix(*r.f, "read"), r.offset, r.buf, r.len, false));
    }
    run(ops, op_kind::read);
    for (op& o : ops) {
      if (o.user != nullptr) std::memcpy(o.user, o.buf, o.len);
    }
  }

  // Every fdatasync in flight at once (IORING_OP_FSYNC, IORING_FSYNC_DATASYNC): the device
  // can flush the files' data together instead of one after the other.
  void sync_files(std::span<file* const> files) override {
    if (files.size() <= 1) {
      for (file* f : files) sync(*f);
      return;
    }
    std::vector<op> ops;
    ops.reserve(files.size());
    for (file* f : files) {
      posix_file& pf = as_posix(*f, "sync");
      ops.push_back(op{pf.fd(), pf.fd(), &pf.path(), nullptr, 1, 0});
    }
    run(ops, op_kind::fsync);
    for (file* f : files) drop_cached_pages(as_posix(*f, "sync"));
  }

  void write(std::span<const write_request> batch) override {
    if (batch.empty()) return;
    if (batch.size() == 1) {
      const write_request& w = batch.front();
      file_pwrite(as_posix(*w.f, "write"), w.offset, w.buf, w.len);
      return;
    }
    std::vector<op> ops;
    ops.reserve(batch.size());
    for (const auto& w : batch) {
      // The buffer is only read by the kernel for a write; the cast keeps one op type.
      ops.push_back(make_op(as_posix(*w.f, "write"), w.offset, const_cast<void*>(w.buf), w.len,
                            true));
    }
    run(ops, op_kind::write);
  }

 private:
  // Exclusive use of one ring for the duration of a call.
  class lease {
   public:
    lease(uring_engine& e, std::unique_ptr<ring> r) : e_(e), r_(std::move(r)) {}
    ~lease() { e_.release(std::move(r_)); }
    lease(const lease&) = delete;
    lease& operator=(const lease&) = delete;
    ring& operator*() { return *r_; }

   private:
    uring_engine& e_;
    std::unique_ptr<ring> r_;
  };

  std::unique_ptr<ring> acquire() {
    std::unique_lock<std::mutex> lock(mu_);
    const pid_t now = ::getpid();
    if (now != pid_) {
      // Forked child: the inherited rings share their memory with the parent's. Leased rings
      // belonged to parent threads that do not exist here; forget them too.
      free_.clear();
      created_ = 0;
      pid_ = now;
    }
    for (;;) {
      if (!free_.empty()) {
        auto r = std::move(free_.back());
        free_.pop_back();
        return r;
      }
      if (created_ < max_rings()) {
        try {
          auto r = std::make_unique<ring>(depth_);
          ++created_;
          return r;
        } catch (const error&) {
          // Out of ring resources: wait for a sibling's ring if there is one, else give up.
          if (created_ == 0) throw;
        }
      }
      cv_.wait(lock, [&] { return !free_.empty(); });
    }
  }

  void release(std::unique_ptr<ring> r) {
    std::lock_guard<std::mutex> lock(mu_);
    if (::getpid() != pid_) return;  // a ring leased before fork(); the child reset the pool
    if (r->broken) {
      --created_;
      r.reset();
    } else {
      free_.push_back(std::move(r));
    }
    cv_.notify_one();
  }

  // Runs `ops` (all reads, all writes, or all fsyncs: `kind`) to completion or first error.
  void run(std::vector<op>& ops, op_kind kind) {
    const bool is_write = kind == op_kind::write;
    const bool is_sync = kind == op_kind::fsync;
    lease held(*this, acquire());
    ring& rg = *held;
    io_uring* u = rg.get();
    const std::size_t depth = std::min<std::size_t>(depth_, rg.depth());

    std::deque<std::size_t> queue;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].len > 0) queue.push_back(i);
    }
    std::size_t staged = 0;     // prepared SQEs not yet accepted by the kernel
    std::size_t in_kernel = 0;  // submitted, completion not yet reaped
    int first_err = 0;
    std::size_t err_op = 0;
    const char* err_what = is_sync ? "sync (fdatasync)" : is_write ? "write" : "read";
    const char* submit_what = is_sync    ? "sync (io_uring_submit)"
                              : is_write ? "write (io_uring_submit)"
                                         : "read (io_uring_submit)";
    const char* wait_what = is_sync    ? "sync (io_uring_wait_cqe)"
                            : is_write ? "write (io_uring_wait_cqe)"
                                       : "read (io_uring_wait_cqe)";

    auto fail = [&](int err, std::size_t i, const char* what) {
      if (first_err == 0) {
        first_err = err;
        err_op = i;
        err_what = what;
      }
    };

    for (;;) {
      while (first_err == 0 && !queue.empty() && staged + in_kernel < depth) {
        io_uring_sqe* sqe = io_uring_get_sqe(u);
        if (sqe == nullptr) break;
        const std::size_t i = queue.front();
        queue.pop_front();
        op& o = ops[i];
        const auto n = static_cast<unsigned>(std::min(o.len - o.done, kMaxChunk));
        if (is_sync) {
          io_uring_prep_fsync(sqe, o.fd, IORING_FSYNC_DATASYNC);
        } else if (is_write) {
          io_uring_prep_write(sqe, o.fd, o.buf + o.done, n, o.offset + o.done);
        } else {
          io_uring_prep_read(sqe, o.fd, o.buf + o.done, n, o.offset + o.done);
        }
        io_uring_sqe_set_data64(sqe, i);
        ++staged;
      }
      if (staged == 0 && in_kernel == 0) break;

      if (staged > 0) {
        const int rc = io_uring_submit(u);
        if (rc >= 0) {
          staged -= static_cast<std::size_t>(rc);
          in_kernel += static_cast<std::size_t>(rc);
        } else if (rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
          // The staged SQEs still sit in the submission queue: the ring cannot be reused.
          rg.broken = true;
          fail(-rc, queue.empty() ? 0 : queue.front(), submit_what);
          staged = 0;
          if (in_kernel == 0) break;
        }
        // -EINTR/-EAGAIN/-EBUSY: reap completions below, then submit again.
      }
      if (in_kernel == 0) continue;

      io_uring_cqe* cqe = nullptr;
      int rc;
      do {
        rc = io_uring_wait_cqe(u, &cqe);
      } while (rc == -EINTR);
      if (rc < 0) {
        // Waiting itself failed: the in-flight operations cannot be accounted for.
        rg.broken = true;
        fail(-rc, 0, wait_what);
        break;
      }
      unsigned head;
      unsigned seen = 0;
      io_uring_for_each_cqe(u, head, cqe) {
        ++seen;
        --in_kernel;
        const std::size_t i = static_cast<std::size_t>(io_uring_cqe_get_data64(cqe));
        const int res = cqe->res;
        op& o = ops[i];
        if (res == -EINTR || res == -EAGAIN) {
          queue.push_back(i);
        } else if (res == -EINVAL && o.fd != o.buffered_fd) {
          o.fd = o.buffered_fd;  // O_DIRECT refused this one (file_pread/file_pwrite: same)
          queue.push_back(i);
        } else if (res < 0) {
          fail(-res, i, err_what);
        } else if (is_sync) {
          o.done = o.len;
        } else if (res == 0) {
          if (is_write) {
            fail(EIO, i, "write (no progress)");
          } else {
            std::memset(o.buf + o.done, 0, o.len - o.done);  // end of file: zeros, not stale bytes
            o.done = o.len;
          }
        } else {
          o.done += static_cast<std::size_t>(res);
          if (o.done < o.len) {
            o.fd = o.buffered_fd;  // the rest of a short direct transfer need not be aligned
            queue.push_back(i);
          }
        }
      }
      io_uring_cq_advance(u, seen);
    }

    if (first_err != 0) {
      const op& o = ops[err_op];
      if (is_sync) throw_errno(first_err, *o.path, err_what);
      throw_transfer_error(first_err, *o.path, err_what, o.offset, o.len);
    }
  }

  const unsigned depth_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<ring>> free_;
  std::size_t created_ = 0;
  pid_t pid_;
};

}  // namespace

std::shared_ptr<engine> make_uring_engine(unsigned queue_depth) {
  return std::make_shared<uring_engine>(queue_depth);
}

}  // namespace pheap::io
