// An in-memory io::engine holding one read-only file, for the parser fuzzers: the parsers
// (read_superblock) read through the I/O seam, and the fuzzers feed them bytes
// without touching the disk. Reads past the end yield zeros, as the engine contract demands.
#pragma once

#include <algorithm>
#include <cstring>
#include <vector>

#include "pheap/error.hpp"
#include "pheap/io.hpp"

namespace pheap::fuzz {

class mem_file final : public io::file {
 public:
  mem_file(std::string path, const std::uint8_t* data, std::size_t size)
      : io::file(std::move(path)), bytes(data, data + size) {}
  int fd() const noexcept override { return 0; }
  std::vector<std::uint8_t> bytes;
};

class mem_engine final : public io::engine {
 public:
  std::string name() const override { return "memory"; }
  std::unique_ptr<io::file> open(const std::string& path, io::open_mode) override { refuse(path); }
  bool exists(const std::string&) override { return false; }
  void create_dir(const std::string& path) override { refuse(path); }
  void remove_file(const std::string& path) override { refuse(path); }
  void remove_dir(const std::string& path) override { refuse(path); }
  void rename(const std::string& from, const std::string&) override { refuse(from); }
  std::vector<std::string> list_dir(const std::string&) override { return {}; }
  void sync_dir(const std::string& path) override { refuse(path); }
  void read(std::span<const io::read_request> batch) override {
    for (const auto& r : batch) {
      const auto& b = static_cast<mem_file*>(r.f)->bytes;
      auto* out = static_cast<std::uint8_t*>(r.buf);
      std::memset(out, 0, r.len);
      if (r.offset < b.size()) {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(r.len, b.size() - r.offset));
        std::memcpy(out, b.data() + r.offset, n);
      }
    }
  }
  void write(std::span<const io::write_request> batch) override { refuse(batch.empty() ? "" : batch[0].f->path()); }
  void sync(io::file& f) override { refuse(f.path()); }
  std::uint64_t size(io::file& f) override { return static_cast<mem_file&>(f).bytes.size(); }
  void truncate(io::file& f, std::uint64_t) override { refuse(f.path()); }
  void punch_hole(io::file& f, std::uint64_t, std::uint64_t) override { refuse(f.path()); }
  std::uint64_t allocated_bytes(io::file& f) override { return size(f); }
  bool clone_file(const std::string& src, const std::string&) override { refuse(src); }

 private:
  [[noreturn]] static void refuse(const std::string& path) {
    throw error(errc::invalid_argument, path, "mem_engine", "read-only in-memory engine");
  }
};

}  // namespace pheap::fuzz
