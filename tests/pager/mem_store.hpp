// tests/pager/mem_store.hpp — an in-memory sparse_store for fast pager tests.
//
// Keeps the sparse_store contract the pager relies on: read_pages returns the newest
// write_pages content (zeros for never-written pages), may_have_data is false exactly for
// never-written pages, page_crc is the CRC32C of the current content, commit() publishes the
// current content atomically with the root and returns epoch+1, and reopen() (a new handle on
// the same shared state) sees the last commit only. Extras for tests: injected read errors per
// page, failing writes, slow reads, held writes (the next hold_writes write_pages() calls wait
// for let_writes_go, before they look at fail_writes), a page_crc that cannot tell
// (crc_unknown), counters.
//
// Pages are shared between the current and the committed map (copy on write): a commit copies
// pointers, not bytes, and a write copies a page only while a commit still holds it. With 2 MiB
// pages a byte copy of every page at each flush was most of a round-trip test's time.
#pragma once

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "pheap/crc32c.hpp"
#include "pheap/error.hpp"
#include "pheap/io.hpp"
#include "pheap/sparse_store.hpp"

namespace pheap::test {

class mem_store : public sparse_store {
 public:
  struct shared {
    std::mutex mu;
    std::uint64_t capacity = 0;
    std::uint32_t page_size = 0;
    using page = std::shared_ptr<std::vector<std::byte>>;  // never null; shared = read-only
    std::map<std::uint64_t, page> current, committed;
    std::uint64_t epoch = 0;
    std::vector<std::byte> root;
    std::set<std::uint64_t> fail_read;  // pages whose reads throw errc::io (EIO)
    std::atomic<bool> fail_writes{false};
    std::atomic<std::uint64_t> failed_write_batches{0};  // write_pages() calls that threw
    std::atomic<bool> crc_unknown{false};  // page_crc() answers nullopt (a store without CRCs)
    std::atomic<std::uint64_t> reads{0}, writes{0};
    std::atomic<std::uint64_t> read_batches{0};  // read_pages() calls (counted on entry)
    // read_pages() calls of more than one page running now, and the most seen at once.
    std::atomic<std::uint32_t> batch_reads_now{0}, batch_reads_most{0};
    std::atomic<std::uint32_t> read_delay_ms{0};  // each read_pages() takes this long (a slow disk)
    std::atomic<std::uint32_t> hold_writes{0};    // write_pages() calls still to hold
    std::atomic<std::uint32_t> held_writes{0};    // write_pages() calls waiting now
    std::atomic<bool> let_writes_go{false};
  };

  static std::unique_ptr<mem_store> create(std::uint64_t capacity, std::uint32_t page_size,
                                           bool read_only = false) {
    auto st = std::make_shared<shared>();
    st->capacity = capacity;
    st->page_size = page_size;
    return std::make_unique<mem_store>(st, read_only);
  }
  // A new handle on the same data: uncommitted writes are dropped (as after a crash).
  static std::unique_ptr<mem_store> reopen(std::shared_ptr<shared> st, bool read_only = false) {
    {
      std::lock_guard lk(st->mu);
      st->current = st->committed;
    }
    return std::make_unique<mem_store>(st, read_only);
  }

  mem_store(std::shared_ptr<shared> st, bool ro) : st_(std::move(st)), ro_(ro) {}
  std::shared_ptr<shared> state() const { return st_; }

  void read_pages(std::span<const page_read> batch) override {
    st_->read_batches.fetch_add(1);
    struct in_flight {  // counts a batch of several pages while it reads (delay included)
      shared& st;
      bool on;
      in_flight(shared& s, bool several) : st(s), on(several) {
        if (!on) return;
        const std::uint32_t now = st.batch_reads_now.fetch_add(1) + 1;
        std::uint32_t most = st.batch_reads_most.load();
        while (now > most && !st.batch_reads_most.compare_exchange_weak(most, now)) {
        }
      }
      ~in_flight() {
        if (on) st.batch_reads_now.fetch_sub(1);
      }
    } counted(*st_, batch.size() > 1);
    if (const auto d = st_->read_delay_ms.load()) std::this_thread::sleep_for(std::chrono::milliseconds(d));
    std::lock_guard lk(st_->mu);
    for (const auto& r : batch) {
      check(r.page);
      if (st_->fail_read.count(r.page)) {
        throw error(errc::io, path_, "read page " + std::to_string(r.page), "injected EIO", EIO);
      }
      auto it = st_->current.find(r.page);
      if (it == st_->current.end()) {
        std::memset(r.buf, 0, st_->page_size);
      } else {
        std::memcpy(r.buf, it->second->data(), st_->page_size);
      }
      st_->reads.fetch_add(1);
    }
  }
  void write_pages(std::span<const page_write> batch) override {
    if (ro_) throw error(errc::read_only, path_, "write", "read-only");
    std::uint32_t h = st_->hold_writes.load();
    while (h > 0 && !st_->hold_writes.compare_exchange_weak(h, h - 1)) {
    }
    if (h > 0) {
      st_->held_writes.fetch_add(1);
      while (!st_->let_writes_go.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      st_->held_writes.fetch_sub(1);
    }
    std::lock_guard lk(st_->mu);
    if (st_->fail_writes) {
      st_->failed_write_batches.fetch_add(1);
      throw error(errc::io, path_, "write pages", "injected EIO", EIO);
    }
    for (const auto& w : batch) {
      check(w.page);
      auto& v = st_->current[w.page];
      // Guarded by mu, so use_count() is exact: 1 means no commit holds this copy.
      if (!v || v.use_count() > 1) v = std::make_shared<std::vector<std::byte>>(st_->page_size);
      std::memcpy(v->data(), w.buf, st_->page_size);
      st_->writes.fetch_add(1);
    }
  }
  void discard(std::uint64_t first, std::uint64_t count) override {
    std::lock_guard lk(st_->mu);
    for (std::uint64_t p = first; p < first + count; ++p) st_->current.erase(p);
  }
  void check_files() override {}  // no files
  bool may_have_data(std::uint64_t page) const override {
    std::lock_guard lk(st_->mu);
    return st_->current.count(page) != 0 || st_->fail_read.count(page) != 0;
  }
  std::optional<std::uint32_t> page_crc(std::uint64_t page) const override {
    if (st_->crc_unknown) return std::nullopt;
    std::lock_guard lk(st_->mu);
    check(page);
    auto it = st_->current.find(page);
    if (it != st_->current.end()) return crc32c(it->second->data(), st_->page_size);
    return crc32c(std::vector<std::byte>(st_->page_size).data(), st_->page_size);
  }
  std::uint64_t commit(std::span<const std::byte> root) override {
    if (ro_) throw error(errc::read_only, path_, "commit", "read-only");
    std::lock_guard lk(st_->mu);
    st_->committed = st_->current;
    st_->root.assign(root.begin(), root.end());
    return ++st_->epoch;
  }
  std::uint64_t prepare(std::span<const std::byte>) override { unsupported("prepare"); }
  std::uint64_t confirm() override { unsupported("confirm"); }
  bool prepared() const override { return false; }
  void snapshot(const std::string&) override {
    throw error(errc::unavailable, path_, "snapshot", "not supported by mem_store");
  }
  bool direct_mapping_possible() override { return false; }
  std::uint64_t prepare_direct_mapping(std::span<const std::byte>) override {
    unsupported("prepare_direct_mapping");
  }
  std::vector<direct_extent> direct_extents() override { unsupported("direct_extents"); }
  std::uint64_t finish_direct_mapping(std::span<const std::byte>) override {
    unsupported("finish_direct_mapping");
  }
  std::uint64_t epoch() const override {
    std::lock_guard lk(st_->mu);
    return st_->epoch;
  }
  std::vector<std::byte> root() const override {
    std::lock_guard lk(st_->mu);
    return st_->root;
  }
  const std::string& path() const override { return path_; }
  const uuid& id() const override { return id_; }
  std::uint32_t page_size() const override { return st_->page_size; }
  std::uint64_t capacity() const override { return st_->capacity; }
  std::uint64_t segment_size() const override { return st_->capacity; }
  bool read_only() const override { return ro_; }
  io::engine& engine() const override {
    static std::shared_ptr<io::engine> e = io::make_posix_engine();
    return *e;
  }
  store_stats stats() const override { return {}; }
  std::uint64_t disk_bytes() const override { return 0; }

  [[noreturn]] void unsupported(const char* op) const {
    throw error(errc::unavailable, path_, op, "not supported by mem_store");
  }

  // Committed content of a page (zeros if never committed).
  std::vector<std::byte> committed_page(std::uint64_t p) const {
    std::lock_guard lk(st_->mu);
    auto it = st_->committed.find(p);
    if (it == st_->committed.end()) return std::vector<std::byte>(st_->page_size);
    return *it->second;
  }

 private:
  void check(std::uint64_t p) const {
    if (p >= st_->capacity / st_->page_size) {
      throw error(errc::invalid_argument, path_, "page", "out of range");
    }
  }
  std::shared_ptr<shared> st_;
  bool ro_;
  std::string path_ = "mem://test";
  uuid id_{};
};

}  // namespace pheap::test
