// Metall's striped static mutexes: threads add to array slots under mutex_lock<N>(key % N).
#include <iostream>
#include <thread>
#include <vector>

#include <metall/utility/mutex.hpp>

static constexpr std::size_t k_stripes = 3;

void add(int key, int amount, long* totals) {
  for (int i = 0; i < 1000; ++i) {
    const std::size_t slot = static_cast<std::size_t>(key) % k_stripes;
    auto guard = metall::utility::mutex::mutex_lock<k_stripes>(slot);
    totals[slot] += amount;
  }
}

int main() {
  long totals[k_stripes] = {0, 0, 0};
  std::vector<std::thread> threads;
  for (int key = 0; key < 6; ++key) threads.emplace_back(add, key, key + 1, totals);
  for (auto& t : threads) t.join();
  for (long t : totals) std::cout << t << std::endl;  // keys 0,3 / 1,4 / 2,5
  return 0;
}
