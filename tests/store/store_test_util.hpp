// Helpers for the SparseStore suites: engine parameterisation, page I/O shorthands and the
// deterministic multi-epoch workload shared by the crash child, the power-cut and the
// fault-injection tests.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/test_util.hpp"
#include "pheap/error.hpp"
#include <fstream>

#include "pheap/io.hpp"
#include "pheap/sparse_store.hpp"

namespace pheap::test {

// "posix" or "io_uring". Throws pheap::error(unavailable) when io_uring cannot be set up.
inline std::shared_ptr<io::engine> make_engine(const std::string& name) {
  if (name == "io_uring") return io::make_uring_engine();
  return io::make_posix_engine();
}

// Base fixture of every engine-parameterised suite: engine() is the engine under test; a
// missing io_uring fails in CI and skips elsewhere.
class store_test : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    try {
      engine_ = make_engine(GetParam());
    } catch (const error& e) {
      if (e.code() != errc::unavailable) throw;
      PHEAP_REQUIRE_FEATURE(std::string("io_uring: ") + e.what());
    }
  }
  std::shared_ptr<io::engine> engine() const { return engine_; }
  store_options opts(std::uint64_t capacity, std::uint32_t page_size,
                     std::uint64_t segment_size) const {
    store_options o;
    o.capacity = capacity;
    o.page_size = page_size;
    o.segment_size = segment_size;
    o.engine = engine_;
    return o;
  }
  store_options open_opts(bool read_only = false) const {
    store_options o;
    o.read_only = read_only;
    o.engine = engine_;
    return o;
  }

  std::shared_ptr<io::engine> engine_;
};

inline std::string engine_param_name(const ::testing::TestParamInfo<std::string>& info) {
  return info.param;
}

#define PHEAP_STORE_SUITE(suite) \
  INSTANTIATE_TEST_SUITE_P(engines, suite, ::testing::Values("posix", "io_uring"), \
                           ::pheap::test::engine_param_name)

// Writes pattern(seed, page, version) into `page`.
inline void write_one(sparse_store& s, std::uint64_t page, std::uint64_t seed,
                      std::uint64_t version) {
  auto buf = pattern(s.page_size(), seed, page, version);
  page_write w{page, buf.data()};
  s.write_pages(std::span<const page_write>(&w, 1));
}

inline std::vector<std::uint8_t> read_one(sparse_store& s, std::uint64_t page) {
  std::vector<std::uint8_t> buf(s.page_size(), 0xEE);  // not zero: zeros must be written
  page_read r{page, buf.data()};
  s.read_pages(std::span<const page_read>(&r, 1));
  return buf;
}

inline bool is_zero(const std::vector<std::uint8_t>& v) {
  return std::all_of(v.begin(), v.end(), [](std::uint8_t b) { return b == 0; });
}

// The whole content of `path` (empty if it cannot be read) / replaces it with `data`.
inline std::vector<std::byte> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<char> v((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(v.size());
  std::memcpy(out.data(), v.data(), v.size());
  return out;
}
inline void write_file(const std::string& path, const std::vector<std::byte>& data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

// Flips the bits of `mask` in the byte of `path` at `offset` (the file must exist).
inline void flip_bit(const std::string& path, std::uint64_t offset, char mask = 0x10) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(f) << path;
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.get(c);
  c = static_cast<char>(c ^ mask);
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(c);
}

inline std::vector<std::byte> bytes_of(const std::string& s) {
  std::vector<std::byte> v(s.size());
  std::memcpy(v.data(), s.data(), s.size());
  return v;
}

// ---------------------------------------------------------------------------------------------
// The deterministic workload. Epoch e (≥ 1) consists of, in this order:
//   1. "scratch" writes of the pages of epoch e with a throw-away version (overwritten below);
//   2. a discard of discarded(e), if any;
//   3. final writes of written(e) with version e, in batches of up to 5 pages;
//   4. commit(root(e)).
// So after commit W, page p holds pattern(seed, p, e) for the last e ≤ W that wrote p, unless a
// later discard zeroed it; the expected region is computable from (seed, W) alone.
struct workload {
  std::uint64_t seed;
  std::uint64_t pages;  // region size in pages

  static constexpr std::uint64_t scratch_version = 1u << 30;

  std::vector<std::uint64_t> written(std::uint64_t e) const {
    std::mt19937_64 rng(seed * 1000003u + e);
    const std::size_t n = 1 + rng() % std::min<std::uint64_t>(pages, 12);
    std::vector<std::uint64_t> v;
    while (v.size() < n) {
      // Half the writes hit a small hot set, so pages are rewritten across epochs.
      const std::uint64_t p = (rng() & 1) ? rng() % std::min<std::uint64_t>(pages, 8)
                                          : rng() % pages;
      if (std::find(v.begin(), v.end(), p) == v.end()) v.push_back(p);
    }
    return v;
  }

  // Every 4th epoch discards a range (possibly covering pages written earlier).
  std::optional<std::pair<std::uint64_t, std::uint64_t>> discarded(std::uint64_t e) const {
    if (e % 4 != 0) return std::nullopt;
    std::mt19937_64 rng(seed * 7919u + e);
    const std::uint64_t first = rng() % pages;
    const std::uint64_t count = 1 + rng() % std::min<std::uint64_t>(pages - first, 16);
    return std::make_pair(first, count);
  }

  std::vector<std::byte> root(std::uint64_t e) const {
    return bytes_of("epoch=" + std::to_string(e) + ";seed=" + std::to_string(seed));
  }

  // Runs epoch e against `s` and commits it; returns the epoch commit() returned.
  std::uint64_t run_epoch(sparse_store& s, std::uint64_t e) const {
    write_epoch(s, e);
    return s.commit(root(e));
  }

  // An eviction storm before epoch e's own writes (what a pager under memory pressure does):
  // every page of epoch e rewritten `rounds` times with throw-away versions, one page per
  // write_pages() call. Leaves the content of epoch e unchanged (its final writes come after).
  void storm(sparse_store& s, std::uint64_t e, int rounds) const {
    for (int r = 0; r < rounds; ++r) {
      for (std::uint64_t p : written(e)) {
        write_one(s, p, seed, scratch_version + 1000 * e + static_cast<std::uint64_t>(r));
      }
    }
  }

  // Steps 1-3 of epoch e (everything but the commit).
  void write_epoch(sparse_store& s, std::uint64_t e) const {
    const std::uint32_t ps = s.page_size();
    const auto pages_e = written(e);
    std::vector<std::vector<std::uint8_t>> bufs;
    for (std::uint64_t p : pages_e) bufs.push_back(pattern(ps, seed, p, scratch_version + e));
    {
      std::vector<page_write> batch;
      for (std::size_t i = 0; i < pages_e.size(); ++i) batch.push_back({pages_e[i], bufs[i].data()});
      s.write_pages(batch);
    }
    if (auto d = discarded(e)) s.discard(d->first, d->second);
    for (std::size_t i = 0; i < pages_e.size(); ++i) fill_pattern(bufs[i].data(), ps, seed, pages_e[i], e);
    for (std::size_t i = 0; i < pages_e.size(); i += 5) {
      std::vector<page_write> batch;
      for (std::size_t k = i; k < std::min(pages_e.size(), i + 5); ++k) {
        batch.push_back({pages_e[k], bufs[k].data()});
      }
      s.write_pages(batch);
    }
  }

  // Version of every page after epoch w (0 = zeros).
  std::vector<std::uint64_t> versions_at(std::uint64_t w) const {
    std::vector<std::uint64_t> v(pages, 0);
    for (std::uint64_t e = 1; e <= w; ++e) {
      if (auto d = discarded(e)) {
        for (std::uint64_t p = d->first; p < d->first + d->second; ++p) v[p] = 0;
      }
      for (std::uint64_t p : written(e)) v[p] = e;
    }
    return v;
  }

  // Empty string if `s` holds exactly the state of epoch w (root and every byte), else the
  // first difference.
  std::string check(sparse_store& s, std::uint64_t w) const {
    if (s.epoch() != w) return "epoch " + std::to_string(s.epoch()) + " != " + std::to_string(w);
    if (s.root() != (w == 0 ? std::vector<std::byte>{} : root(w))) return "root mismatch";
    const auto v = versions_at(w);
    const std::uint32_t ps = s.page_size();
    std::vector<std::uint8_t> got(ps), want(ps);
    for (std::uint64_t p = 0; p < pages; ++p) {
      page_read r{p, got.data()};
      s.read_pages(std::span<const page_read>(&r, 1));
      if (v[p] == 0) {
        std::fill(want.begin(), want.end(), 0);
      } else {
        fill_pattern(want.data(), ps, seed, p, v[p]);
      }
      if (got != want) {
        return "page " + std::to_string(p) + " differs from version " + std::to_string(v[p]) +
               " of epoch " + std::to_string(w);
      }
      if (v[p] != 0 && !s.may_have_data(p)) {
        return "may_have_data false for page " + std::to_string(p) + " holding data";
      }
    }
    return {};
  }
};

}  // namespace pheap::test
