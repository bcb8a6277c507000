#include "common/test_util.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>

namespace pheap::test {

bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && (std::strcmp(ci, "true") == 0 || std::strcmp(ci, "1") == 0);
}

temp_dir::temp_dir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/pheap-test-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    throw std::runtime_error("mkdtemp " + tmpl + ": " + std::strerror(errno));
  }
  path_ = tmpl;
}

temp_dir::~temp_dir() {
  if (std::getenv("PHEAP_KEEP_TEST_DIRS") != nullptr) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void fill_pattern(void* buf, std::size_t len, std::uint64_t seed, std::uint64_t page,
                  std::uint64_t version) {
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull ^ (page + 1) * 0xBF58476D1CE4E5B9ull ^
                    (version + 1) * 0x94D049BB133111EBull;
  auto* p = static_cast<std::uint8_t*>(buf);
  std::size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    x ^= x >> 30; x *= 0xBF58476D1CE4E5B9ull; x ^= x >> 27; x *= 0x94D049BB133111EBull; x ^= x >> 31;
    std::memcpy(p + i, &x, 8);
  }
  for (; i < len; ++i) p[i] = static_cast<std::uint8_t>(x >> (8 * (i % 8)));
}

std::vector<std::uint8_t> pattern(std::size_t len, std::uint64_t seed, std::uint64_t page,
                                  std::uint64_t version) {
  std::vector<std::uint8_t> v(len);
  fill_pattern(v.data(), len, seed, page, version);
  return v;
}

std::string sibling_binary(const std::string& name) {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("cannot resolve /proc/self/exe: " + ec.message());
  return (self.parent_path() / name).string();
}

}  // namespace pheap::test
