// A Metall program, unchanged but for the link line: a map of strings to vectors, reopened.
#include <iostream>

#include <metall/container/map.hpp>
#include <metall/container/string.hpp>
#include <metall/container/vector.hpp>
#include <metall/metall.hpp>

using word_t = metall::container::string;
using index_t = metall::container::map<word_t, metall::container::vector<int>>;

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : "datastore";
  {
    metall::manager manager(metall::create_only, path);
    auto* index = manager.construct<index_t>("index")(manager.get_allocator());
    (*index)[word_t("installed", manager.get_allocator())].push_back(17);
  }
  metall::manager manager(metall::open_read_only, path);
  for (const auto& [k, v] : *manager.find<index_t>("index").first) std::cout << k << ' ' << v.at(0) << std::endl;
  return 0;
}
