// Shared setup for manager-level tests: small datastores in a fresh temp dir, and a skip (or
// CI failure) when the kernel offers no userfaultfd.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include "common/test_util.hpp"
#include "pheap/pheap.hpp"

namespace pheap::test {

inline options small_options(std::uint64_t capacity = 256ull << 20) {
  options o;
  o.capacity = capacity;
  o.page_size = 64 * 1024;
  o.segment_size = 64ull << 20;
  o.pager.buffer_size = 128ull << 20;
  return o;
}

// The length of the mapping that starts at `base`, from /proc/self/maps (0: none).
inline std::uint64_t mapping_length_at(const void* base) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::uint64_t b = 0, e = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &b, &e) == 2 && b == reinterpret_cast<std::uintptr_t>(base)) {
      return e - b;
    }
  }
  return 0;
}

class manager_test : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_ / "ds";
    try {
      manager probe(create_only, dir_ / "probe", small_options());
    } catch (const error& e) {
      if (e.code() == errc::unavailable) {
        PHEAP_REQUIRE_FEATURE(std::string("userfaultfd pager: ") + e.what());
      }
      throw;
    }
  }
  temp_dir dir_;
  std::string path_;
};

}  // namespace pheap::test
