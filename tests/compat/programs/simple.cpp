// Metall's "simple" usage: a Boost vector with the manager's allocator, created, reattached
// after consistent(), appended to, printed and destroyed.
#include <iostream>

#include <boost/container/vector.hpp>

#include <metall/metall.hpp>

using ints = boost::container::vector<int, metall::manager::allocator_type<int>>;

int main() {
  {
    metall::manager manager(metall::create_only, "datastore");
    ints* v = manager.construct<ints>("numbers")(manager.get_allocator());
    v->push_back(7);
  }  // the destructor makes it durable

  if (!metall::manager::consistent("datastore")) {
    std::cerr << "datastore is not consistent" << std::endl;
    return 1;
  }
  metall::manager manager(metall::open_only, "datastore");
  ints* v = manager.find<ints>("numbers").first;
  v->push_back(11);
  for (int x : *v) std::cout << x << std::endl;
  manager.destroy<ints>("numbers");
  std::cout << (manager.find<ints>("numbers").first == nullptr ? "destroyed" : "still there") << std::endl;
  return 0;
}
