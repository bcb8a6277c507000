// Compiles with pheap::metall, must not with pheap::pheap alone (see CMakeLists.txt).
#include <metall/metall.hpp>
int main() { return metall::manager::consistent("nowhere") ? 1 : 0; }
