// Multithreaded allocate/free/construct/find/destroy with objects handed between threads and
// a concurrent flusher, over the real pager. Run under TSan and ASan+UBSan builds too
// (-DPHEAP_SANITIZE=thread / address,undefined). Proves: no lost or duplicated objects, no
// overlapping allocations (every object keeps its tag), counts match, invariants hold, and a
// reopen after the run shows the same named objects.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <random>
#include <set>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "manager_fixture.hpp"

namespace {

using namespace pheap;
using namespace pheap::test;

struct tagged {
  explicit tagged(std::uint64_t t) : tag(t), check(~t) {}
  std::uint64_t tag;
  std::uint64_t check;
};

class Stress : public manager_test {};

TEST_F(Stress, ConcurrentObjectAndRawOperationsWithHandoffAndFlushesStayConsistent) {
  constexpr int threads = 4;
  constexpr int rounds = 6000;
  constexpr int names = 64;
  std::atomic<bool> bad{false};
  std::atomic<bool> done{false};
  std::set<std::string> expected_named;
  {
    manager m(create_only, path_, small_options(1ull << 30));
    std::vector<std::mutex> box_mu(threads);
    std::vector<std::vector<std::pair<void*, std::uint64_t>>> raw_box(threads);  // (ptr, tag)
    std::vector<std::vector<tagged*>> anon_box(threads);
    // The application-level protocol for shared names: readers of a found object hold this
    // shared, destroyers hold it exclusive (the heap makes find/destroy themselves safe; using
    // a pointer after another thread destroyed the object is the application's problem).
    std::shared_mutex names_mu;
    std::mutex set_mu;
    std::set<std::string> live_names;

    auto worker = [&](int t) {
      std::mt19937_64 rng(t * 7919 + 1);
      std::vector<std::pair<void*, std::uint64_t>> raw;
      std::vector<tagged*> anon;
      for (int i = 0; i < rounds; ++i) {
        const int op = static_cast<int>(rng() % 9);
        const int to = static_cast<int>(rng() % threads);
        try {
          switch (op) {
            case 0: case 1: {  // raw allocate, maybe hand off
              const std::size_t size = 8 + rng() % 3000;
              void* p = m.allocate(size);
              if (p == nullptr) { ADD_FAILURE() << "allocate"; bad = true; break; }
              const std::uint64_t tag = rng();
              *static_cast<std::uint64_t*>(p) = tag;
              if (to != t) { std::lock_guard g(box_mu[to]); raw_box[to].emplace_back(p, tag); }
              else raw.emplace_back(p, tag);
              break;
            }
            case 2: {  // raw free (own or received)
              { std::lock_guard g(box_mu[t]); raw.insert(raw.end(), raw_box[t].begin(), raw_box[t].end()); raw_box[t].clear(); }
              if (raw.empty()) break;
              const std::size_t k = rng() % raw.size();
              if (*static_cast<std::uint64_t*>(raw[k].first) != raw[k].second) { ADD_FAILURE() << "raw tag"; bad = true; }
              m.deallocate(raw[k].first);
              raw[k] = raw.back();
              raw.pop_back();
              break;
            }
            case 3: {  // anonymous object, maybe hand off
              const std::uint64_t tag = rng();
              tagged* p = m.construct<tagged>(anonymous_instance)(tag);
              if (to != t) { std::lock_guard g(box_mu[to]); anon_box[to].push_back(p); }
              else anon.push_back(p);
              break;
            }
            case 4: {  // destroy an anonymous object
              { std::lock_guard g(box_mu[t]); anon.insert(anon.end(), anon_box[t].begin(), anon_box[t].end()); anon_box[t].clear(); }
              if (anon.empty()) break;
              const std::size_t k = rng() % anon.size();
              if (anon[k]->check != ~anon[k]->tag) { ADD_FAILURE() << "anon tag"; bad = true; }
              m.destroy_ptr(anon[k]);
              anon[k] = anon.back();
              anon.pop_back();
              break;
            }
            case 5: case 6: {  // find_or_construct a shared name
              const std::string name = "obj" + std::to_string(rng() % names);
              const std::uint64_t tag = std::hash<std::string>{}(name);
              std::shared_lock g(names_mu);  // racing find_or_construct of one name is the point
              tagged* p = m.find_or_construct<tagged>(name)(tag);
              if (p == nullptr || p->tag != tag || p->check != ~tag) {
                ADD_FAILURE() << "find_or_construct " << name;
                bad = true;
              }
              std::lock_guard sg(set_mu);
              live_names.insert(name);
              break;
            }
            case 7: {  // find a shared name; if present it must be intact
              const std::string name = "obj" + std::to_string(rng() % names);
              std::shared_lock g(names_mu);
              auto [p, n] = m.find<tagged>(name);
              if (p != nullptr && (n != 1 || p->tag != std::hash<std::string>{}(name))) {
                ADD_FAILURE() << "find " << name;
                bad = true;
              }
              break;
            }
            case 8: {  // destroy a shared name (may race with find/construct of it)
              const std::string name = "obj" + std::to_string(rng() % names);
              std::unique_lock g(names_mu);  // keep live_names exact
              if (m.destroy<tagged>(name)) live_names.erase(name);
              break;
            }
          }
        } catch (const std::exception& e) {
          ADD_FAILURE() << "thread " << t << ": " << e.what();
          bad = true;
        }
      }
      for (auto& [p, tag] : raw) m.deallocate(p);
      for (auto* p : anon) m.destroy_ptr(p);
    };
    std::thread flusher([&] {
      std::uint64_t prev = 0;
      while (!done) {
        const std::uint64_t e = m.flush();
        if (e <= prev) { ADD_FAILURE() << "epoch " << e << " after " << prev; bad = true; }
        prev = e;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) ts.emplace_back(worker, t);
    for (auto& th : ts) th.join();
    done = true;
    flusher.join();
    for (int t = 0; t < threads; ++t) {
      for (auto& [p, tag] : raw_box[t]) m.deallocate(p);
      for (auto* p : anon_box[t]) m.destroy_ptr(p);
    }
    EXPECT_FALSE(bad.load());
    EXPECT_EQ(m.get_num_anonymous_objects(), 0u);
    EXPECT_EQ(m.get_num_named_objects(), live_names.size());
    const auto problems = m.check();
    EXPECT_TRUE(problems.empty()) << problems.front();
    expected_named = live_names;
  }
  manager r(open_read_only, path_);
  std::set<std::string> found;
  for (auto it = r.named_begin(); it != r.named_end(); ++it) found.emplace((*it).name);
  EXPECT_EQ(found, expected_named);
  EXPECT_TRUE(r.check().empty());
}

}  // namespace
