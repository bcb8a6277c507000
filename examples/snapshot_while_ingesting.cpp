// Take a snapshot of a graph while edges are still being ingested.
//
//   ./example_snapshot_while_ingesting /tmp/my-graph /tmp/my-graph-snap
//
// manager::snapshot(dst) flushes and writes an independent datastore holding exactly that
// watermark (e.g. for a read-only analysis job while ingestion goes on).
//
// The one rule: a watermark captures memory as it is at flush time, so the graph must be at a
// consistent point then — no insert half done. Here the ingesting thread inserts in batches
// under a shared lock and the snapshot takes the lock exclusively, i.e. the ingester pauses
// at a batch boundary for the duration of snapshot() and then simply continues. (The
// pheap-graph tool follows the same rule: it flushes only between batches.)
#include <pheap/graph/algorithms.hpp>
#include <pheap/graph/store.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <shared_mutex>
#include <thread>

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "/tmp/pheap-example-live";
  const std::string snap = argc > 2 ? argv[2] : "/tmp/pheap-example-snapshot";
  std::filesystem::remove_all(path);
  std::filesystem::remove_all(snap);

  pheap::options opt = pheap::options::from_env();  // the PHEAP_* variables, then our own choices
  opt.capacity = 1ull << 30;
  pheap::manager m(pheap::create_only, path, opt);
  auto& g = pheap::graph::open_or_create_graph<void>(m, "graph", /*directed=*/true);

  std::atomic<bool> stop{false};
  pheap::graph::bank_locks locks(g.num_banks());
  std::shared_mutex batch_boundary;
  std::thread ingester([&] {
    for (std::uint64_t i = 0; !stop;) {
      std::shared_lock batch(batch_boundary);  // one batch = 1000 edges
      for (const std::uint64_t end = i + 1000; i < end; ++i) g.insert(i % 1000, (i * 7919) % 1000, 0, &locks);
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));

  std::uint64_t epoch = 0, snap_arcs = 0;
  {
    std::unique_lock pause(batch_boundary);  // waits for the current batch to finish
    snap_arcs = g.num_arcs();
    epoch = m.snapshot(snap);                // consistent with watermark `epoch`
  }                                          // ingestion resumes here
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  stop = true;
  ingester.join();
  const auto live_arcs = g.num_arcs();
  m.flush();

  // The snapshot is a datastore of its own: open it read-only and look at the graph.
  pheap::manager s(pheap::open_read_only, snap);
  pheap::graph::visit_graph(s, "graph", [&](const auto& sg) {
    std::printf("snapshot at watermark %llu: %llu arcs (%llu at the pause); live graph went on to %llu arcs\n",
                static_cast<unsigned long long>(epoch), static_cast<unsigned long long>(sg.num_arcs()),
                static_cast<unsigned long long>(snap_arcs), static_cast<unsigned long long>(live_arcs));
  });
  return 0;
}
