// The pread/pwrite engine: each request of a batch is one pread_full/pwrite_full loop, run in
// order on the calling thread. Stateless apart from the descriptors, hence trivially
// thread-safe. Used where io_uring is unavailable or PHEAP_IO_ENGINE=posix.
#include <memory>

#include "posix_file.hpp"

namespace pheap::io {

namespace {

class posix_engine final : public fs_engine {
 public:
  std::string name() const override { return "posix"; }

  void read(std::span<const read_request> batch) override {
    for (const auto& r : batch) {
      pread_full(as_posix(*r.f, "read").fd(), r.f->path(), r.offset, r.buf, r.len);
    }
  }

  void write(std::span<const write_request> batch) override {
    for (const auto& w : batch) {
      pwrite_full(as_posix(*w.f, "write").fd(), w.f->path(), w.offset, w.buf, w.len);
    }
  }
};

}  // namespace

std::shared_ptr<engine> make_posix_engine() { return std::make_shared<posix_engine>(); }

}  // namespace pheap::io
