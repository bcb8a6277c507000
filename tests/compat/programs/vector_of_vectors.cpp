// Metall's nested containers: a vector of vectors whose outer allocator is a
// scoped_allocator_adaptor, filled three ways (resize, emplace_back with a count, emplace_back
// from an iterator range), read back after a reopen.
#include <iostream>
#include <list>

#include <boost/container/scoped_allocator.hpp>
#include <boost/container/vector.hpp>

#include <metall/metall.hpp>

namespace bc = boost::container;
using row = bc::vector<long, metall::manager::allocator_type<long>>;
using table = bc::vector<row, bc::scoped_allocator_adaptor<metall::manager::allocator_type<row>>>;

int main() {
  {
    metall::manager manager(metall::create_only, "datastore");
    table* t = manager.construct<table>("table")(manager.get_allocator<>());
    t->resize(1);
    (*t)[0].push_back(10);
    t->emplace_back(2);  // a row of two zeros, built with the table's allocator
    (*t)[1][1] = 21;
    const std::list<long> source{30, 31, 32};
    t->emplace_back(source.begin(), source.end());
  }
  metall::manager manager(metall::open_read_only, "datastore");
  const table* t = manager.find<table>("table").first;
  for (const row& r : *t) {
    for (long x : r) std::cout << x << ' ';
    std::cout << std::endl;
  }
  return 0;
}
