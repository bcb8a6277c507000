// Metall's multi-level containers: unordered_map<unsigned, unordered_multimap<uint64_t,
// vector<char>>> with a scoped adaptor on the outer map, snapshotted; the snapshot is then
// opened read-write and used.
#include <cstdint>
#include <functional>
#include <iostream>

#include <boost/container/scoped_allocator.hpp>
#include <boost/container/vector.hpp>
#include <boost/unordered_map.hpp>

#include <metall/metall.hpp>

using chars = boost::container::vector<char, metall::manager::allocator_type<char>>;
using inner = boost::unordered_multimap<std::uint64_t, chars, std::hash<std::uint64_t>, std::equal_to<std::uint64_t>,
                                        metall::manager::allocator_type<std::pair<std::uint64_t, chars>>>;
using outer = boost::unordered_map<
    unsigned, inner, std::hash<unsigned>, std::equal_to<unsigned>,
    boost::container::scoped_allocator_adaptor<metall::manager::allocator_type<std::pair<unsigned, inner>>>>;

int main() {
  {
    metall::manager manager(metall::create_only, "datastore");
    outer* m = manager.construct<outer>("levels")(manager.get_allocator<>());
    chars word(manager.get_allocator());
    word.push_back('o');
    word.push_back('k');
    (*m)[7].emplace(70, word);
    (*m)[7].emplace(70, word);
    manager.snapshot("datastore-snapshot");
  }
  metall::manager manager(metall::open_only, "datastore-snapshot");
  outer* m = manager.find<outer>("levels").first;
  inner& level = (*m)[7];
  std::cout << level.count(70) << ' ' << level.find(70)->second[0] << level.find(70)->second[1] << std::endl;
  return 0;
}
