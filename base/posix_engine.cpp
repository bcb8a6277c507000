// The pread/pwrite engine: each request of a batch is one file_pread/file_pwrite (a pread/pwrite
// loop on the route the file gives it, posix_file.hpp), run in order on the calling thread. Stateless apart from the descriptors, hence trivially
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
      file_pread(as_posix(*r.f, "read"), r.offset, r.buf, r.len);
    }
  }

  void write(std::span<const write_request> batch) override {
    for (const auto& w : batch) {
      file_pwrite(as_posix(*w.f, "write"), w.offset, w.buf, w.len);
    }
  }
};

}  // namespace

std::shared_ptr<engine> make_posix_engine() { return std::make_shared<posix_engine>(); }

}  // namespace pheap::io
