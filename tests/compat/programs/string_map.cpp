// Metall's maps with string keys and string values, using manager::scoped_allocator_type so
// the strings a map creates itself (operator[]) are in the heap too.
#include <iostream>

#include <boost/container/map.hpp>
#include <boost/container/string.hpp>

#include <metall/metall.hpp>

using pstring = boost::container::basic_string<char, std::char_traits<char>, metall::manager::allocator_type<char>>;

void keyed_by_string() {
  using entry = std::pair<const pstring, int>;
  using word_counts = boost::container::map<pstring, int, std::less<>, metall::manager::scoped_allocator_type<entry>>;
  {
    metall::manager manager(metall::create_only, "datastore");
    auto* m = manager.construct<word_counts>("counts")(manager.get_allocator<>());
    m->insert(entry(pstring("apple", manager.get_allocator<>()), 3));
    (*m)[pstring("pear", manager.get_allocator<>())] = 5;
  }
  metall::manager manager(metall::open_only, "datastore");
  auto* m = manager.find<word_counts>("counts").first;
  std::cout << m->at(pstring("apple", manager.get_allocator<>())) << std::endl;
  std::cout << m->at(pstring("pear", manager.get_allocator<>())) << std::endl;
}

void string_values() {
  using entry = std::pair<const int, pstring>;
  using names = boost::container::map<int, pstring, std::less<>, metall::manager::scoped_allocator_type<entry>>;
  {
    metall::manager manager(metall::create_only, "datastore");
    auto* m = manager.construct<names>("names")(manager.get_allocator<>());
    m->insert(entry(1, pstring("one", manager.get_allocator<>())));
    (*m)[2] = pstring("two", manager.get_allocator<>());
    (*m)[3].append("three");  // a value the map built with its own (scoped) allocator
  }
  metall::manager manager(metall::open_only, "datastore");
  auto* m = manager.find<names>("names").first;
  for (const auto& [k, v] : *m) std::cout << k << '=' << v << std::endl;
}

int main() {
  keyed_by_string();
  string_values();
  return 0;
}
