// Metall's string: a Boost basic_string with the manager's allocator, long enough to live
// outside the small-string buffer, printed before and after a reopen.
#include <iostream>
#include <string>

#include <boost/container/string.hpp>

#include <metall/metall.hpp>

using pstring = boost::container::basic_string<char, std::char_traits<char>, metall::manager::allocator_type<char>>;

int main() {
  {
    metall::manager manager(metall::create_only, "datastore");
    pstring* s = manager.construct<pstring>("greeting")("persistent strings outlive their process",
                                                       manager.get_allocator<>());
    std::cout << *s << std::endl;
  }
  metall::manager manager(metall::open_only, "datastore");
  pstring* s = manager.find<pstring>("greeting").first;
  s->append(", again");
  std::cout << *s << std::endl;
  return 0;
}
