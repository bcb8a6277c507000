// Metall's concurrent_map in the heap: concurrent inserts (three argument forms) and edits
// (scoped_edit and edit), then another edit after a reopen and a walk over all entries.
#include <iostream>
#include <thread>
#include <utility>

#include <metall/container/concurrent_map.hpp>
#include <metall/metall.hpp>

using map_type = metall::container::concurrent_map<int, long, std::less<int>, std::hash<int>,
                                                   metall::manager::allocator_type<std::pair<const int, long>>>;

int main() {
  {
    metall::manager manager(metall::create_only, "datastore");
    map_type* m = manager.construct<map_type>("map")(manager.get_allocator<>());
    std::thread t1([m] { m->insert(std::make_pair(1, 10L)); });
    std::thread t2([m] {
      auto kv = std::make_pair(2, 20L);
      m->insert(std::move(kv));
    });
    std::thread t3([m] {
      const map_type::value_type kv(3, 30);
      m->insert(kv);
    });
    t1.join();
    t2.join();
    t3.join();
    std::thread t4([m] {
      auto [value, lock] = m->scoped_edit(1);
      value += 1;
    });
    std::thread t5([m] { m->edit(4, [](long& value) { value = 40; }); });  // inserted by edit
    t4.join();
    t5.join();
    std::cout << m->size() << ' ' << m->insert(std::make_pair(2, 0L)) << std::endl;
  }
  metall::manager manager(metall::open_only, "datastore");
  map_type* m = manager.find<map_type>("map").first;
  m->edit(3, [](long& value) { value *= 2; });
  for (auto it = m->cbegin(); it != m->cend(); ++it) std::cout << it->first << ' ' << it->second << std::endl;
  std::cout << "find 4: " << m->find(4)->second << ", count 5: " << m->count(5) << std::endl;
  return 0;
}
