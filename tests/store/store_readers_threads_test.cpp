// Readers beside a writer, in one process (the reader table's lock-free paths under TSan):
// reader threads open, read their whole watermark, refresh, while a writer thread commits the
// deterministic workload (store_test_util.hpp) as fast as it can; every view is exactly its
// epoch's, and once the readers are gone nothing stays pinned.
#include <atomic>
#include <thread>

#include "store_test_util.hpp"

namespace pheap::test {
namespace {

class StoreReadersThreads : public store_test {};
PHEAP_STORE_SUITE(StoreReadersThreads);

TEST_P(StoreReadersThreads, ReaderThreadsBesideAWriterThreadEachReadExactlyTheirWatermark) {
  temp_dir dir;
  const std::string path = dir / "ds";
  const workload w{77, 128};
  auto writer = sparse_store::create(path, opts(128 * 4096, 4096, 32 * 4096));
  w.run_epoch(*writer, 1);
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> views{0}, refreshes{0};
  std::thread wt([&] {
    for (std::uint64_t e = 2; !stop.load(); ++e) w.run_epoch(*writer, e);
  });
  std::vector<std::thread> readers;
  std::vector<std::string> problems(3);
  const int opens = sanitized_or(60, 15);
  for (int k = 0; k < 3; ++k) {
    readers.emplace_back([&, k] {
      for (int i = 0; i < opens && problems[k].empty(); ++i) {
        auto r = sparse_store::open(path, open_opts(true));
        for (int j = 0; j < 3 && problems[k].empty(); ++j) {
          if (const std::string why = w.check(*r, r->epoch()); !why.empty()) problems[k] = why;
          ++views;
          if (r->refresh().moved) ++refreshes;
        }
      }
    });
  }
  for (auto& t : readers) t.join();
  stop = true;
  wt.join();
  for (const std::string& p : problems) EXPECT_EQ(p, "");
  EXPECT_EQ(views.load(), 3u * static_cast<std::uint64_t>(opens) * 3u);
  EXPECT_GT(refreshes.load(), 0u) << "the writer committed while the readers read";
  EXPECT_GT(writer->stats().pins_made, 0u) << "the hot pages were kept for older readers";
  w.run_epoch(*writer, writer->epoch() + 1);  // reaps
  EXPECT_EQ(writer->stats().readers, 0u);
  EXPECT_EQ(writer->stats().pinned_bytes, 0u);
}

}  // namespace
}  // namespace pheap::test
