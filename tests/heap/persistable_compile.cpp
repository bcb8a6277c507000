// Compile-time cases of pheap/persistable.hpp, one per PHEAP_CASE_* macro; compiled (never run)
// by tests/cmake/compile_check.cmake from tests/heap/CMakeLists.txt. REFUSE_* cases must fail
// with PHEAP_PERSISTABLE_MESSAGE, ACCEPT_* cases must compile.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <boost/container/vector.hpp>

#include "pheap/pheap.hpp"

namespace {

// A struct whose member the trait cannot see: the user says so.
struct session_cache {
  std::vector<int> ids;
};

// A struct template whose std::allocator argument only sizes temporaries: the user accepts it.
template <class Alloc>
struct tally {
  std::uint64_t count = 0;
};

}  // namespace

template <>
struct pheap::persistable<session_cache> : std::false_type {};
template <>
struct pheap::persistable<tally<std::allocator<int>>> : std::true_type {};

void cases(pheap::manager& m) {
#if defined(PHEAP_CASE_REFUSE_STD_VECTOR)
  m.construct<std::vector<int>>("v")();
#elif defined(PHEAP_CASE_REFUSE_STD_STRING_FIND_OR_CONSTRUCT)
  m.find_or_construct<std::string>("s")("text");
#elif defined(PHEAP_CASE_REFUSE_STD_MAP_UNIQUE)
  m.construct<std::map<int, int>>(pheap::unique_instance)();
#elif defined(PHEAP_CASE_REFUSE_STD_STRING_CONSTRUCT_IT)
  const char* words[] = {"a", "b"};
  m.construct_it<std::string>("words")[2](words);
#elif defined(PHEAP_CASE_REFUSE_RAW_POINTER)
  static int x = 0;
  m.construct<int*>("p")(&x);
#elif defined(PHEAP_CASE_REFUSE_REFERENCE)
  m.construct<int&>("r");
#elif defined(PHEAP_CASE_REFUSE_STD_STRING_INSIDE_HEAP_VECTOR)
  m.construct<pheap::container::vector<std::string>>("v")(m.get_allocator<>());
#elif defined(PHEAP_CASE_REFUSE_BOOST_VECTOR_WITHOUT_HEAP_ALLOCATOR)
  m.construct<boost::container::vector<int>>("v")();
#elif defined(PHEAP_CASE_REFUSE_UNIQUE_PTR)
  m.construct<std::unique_ptr<int>>(pheap::anonymous_instance)();
#elif defined(PHEAP_CASE_REFUSE_USER_OPT_OUT)
  m.construct<pheap::container::vector<session_cache>>("caches")(m.get_allocator<>());
#elif defined(PHEAP_CASE_ACCEPT_HEAP_TYPES)
  using adj = pheap::container::unordered_map<std::uint64_t, pheap::container::vector<std::uint64_t>>;
  m.construct<adj>("adj")(m.get_allocator<>());
  m.construct<pheap::container::string>("s")("text", m.get_allocator<>());
  m.construct<boost::interprocess::offset_ptr<int>>("p")(nullptr);
  m.construct<double>("d")[4](0.5);
#elif defined(PHEAP_CASE_ACCEPT_USER_OPT_IN)
  m.construct<tally<std::allocator<int>>>("tally")();
#else
#error "define one PHEAP_CASE_*"
#endif
}
