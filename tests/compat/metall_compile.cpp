// Compile-time cases of the Metall layer, compiled (never run) by tests/cmake/compile_check.cmake.
#include <string>
#include <vector>

#include <metall/container/string.hpp>
#include <metall/container/unordered_map.hpp>
#include <metall/container/vector.hpp>
#include <metall/metall.hpp>

void cases(metall::manager& m) {
#if defined(METALL_CASE_REFUSE_STD_VECTOR)
  m.construct<std::vector<std::string>>("v")();
#elif defined(METALL_CASE_ACCEPT_CONTAINERS)
  m.construct<metall::container::unordered_map<int, metall::container::vector<metall::container::string>>>("m")(
      m.get_allocator());
  m.find_or_construct<metall::container::string>("s")("text", m.get_allocator());
#else
#error "define one METALL_CASE_*"
#endif
}
