// Metall's offset pointer: a raw allocation reached after a reopen through a named
// metall::offset_ptr, converted back with metall::to_raw_pointer, then freed.
#include <iostream>

#include <metall/metall.hpp>

using int_ptr = metall::offset_ptr<int>;

int main() {
  {
    metall::manager manager(metall::create_only, "datastore");
    int* block = static_cast<int*>(manager.allocate(4 * sizeof(int)));
    for (int i = 0; i < 4; ++i) block[i] = 100 + i;
    manager.construct<int_ptr>("block")(block);
  }
  {
    metall::manager manager(metall::open_only, "datastore");
    int_ptr* p = manager.find<int_ptr>("block").first;
    int* block = metall::to_raw_pointer(*p);
    std::cout << block[0] << ' ' << block[3] << std::endl;
    std::cout << (metall::to_raw_pointer(block) == block ? "raw pointers pass through" : "?") << std::endl;
    manager.deallocate(block);
    *p = nullptr;
    manager.destroy<int_ptr>("block");
  }
  metall::manager manager(metall::open_read_only, "datastore");
  std::cout << (manager.all_memory_deallocated() ? "all memory returned" : "leak") << std::endl;
  return 0;
}
