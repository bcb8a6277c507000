// Metall's "complex map": a map whose mapped type is the user's own allocator-aware struct
// holding a vector and a string, all through rebound allocators and a scoped adaptor.
#include <iostream>
#include <memory>

#include <boost/container/map.hpp>
#include <boost/container/scoped_allocator.hpp>
#include <boost/container/string.hpp>
#include <boost/container/vector.hpp>

#include <metall/metall.hpp>

namespace bc = boost::container;

template <class Alloc, class U>
using rebound = typename std::allocator_traits<Alloc>::template rebind_alloc<U>;

template <class Alloc>
struct record {
  using allocator_type = Alloc;
  explicit record(const allocator_type& a) : samples(a), label(a) {}
  bc::vector<double, rebound<Alloc, double>> samples;
  bc::basic_string<char, std::char_traits<char>, rebound<Alloc, char>> label;
};

template <class Alloc>
using record_map = bc::map<int, record<Alloc>, std::less<>,
                           bc::scoped_allocator_adaptor<rebound<Alloc, std::pair<const int, record<Alloc>>>>>;
using metall_record_map = record_map<metall::manager::allocator_type<std::byte>>;

int main() {
  {
    metall::manager manager(metall::create_only, "datastore");
    auto* m = manager.construct<metall_record_map>("records")(manager.get_allocator<>());
    (*m)[4];  // built with the map's allocator
    m->at(4).samples.push_back(0.25);
    m->at(4).label = "fourth record, default-constructed by operator[]";
    m->try_emplace(9);
    m->at(9).samples.push_back(0.5);
    m->at(9).label = "ninth record, from try_emplace";
  }
  metall::manager manager(metall::open_read_only, "datastore");
  const auto* m = manager.find<metall_record_map>("records").first;
  for (const auto& [key, r] : *m) std::cout << key << ' ' << r.samples.at(0) << ' ' << r.label << std::endl;
  return 0;
}
