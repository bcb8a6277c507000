// Shared setup for manager-level tests: small datastores in a fresh temp dir, and a skip (or
// CI failure) when the kernel offers no userfaultfd.
#pragma once

#include <gtest/gtest.h>

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
