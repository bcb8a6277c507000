// Metall's fallback allocator: one vector type that lives in the heap when given the
// manager's allocator and in ordinary memory when default-constructed.
#include <iostream>

#include <metall/container/vector.hpp>
#include <metall/metall.hpp>

using vector_t = metall::container::vector<int, metall::manager::fallback_allocator<int>>;

int main() {
  {
    metall::manager manager(metall::create_only, "datastore");
    vector_t* persistent = manager.construct<vector_t>("vec")(manager.get_allocator());
    persistent->push_back(1);
    std::cout << (*persistent)[0] << ' ' << persistent->get_allocator().stateful_allocator_available() << std::endl;
  }
  vector_t temporary;  // malloc
  temporary.push_back(2);
  std::cout << temporary[0] << ' ' << temporary.get_allocator().stateful_allocator_available() << std::endl;

  metall::manager manager(metall::open_read_only, "datastore");
  std::cout << manager.find<vector_t>("vec").first->at(0) << std::endl;
  return 0;
}
