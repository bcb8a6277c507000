// Metall's allocator-aware type: a user struct with allocator_type and allocator-extended
// copy/move constructors, stored in a metall::container::vector whose allocator is
// std::scoped_allocator_adaptor, so the strings inside use the heap.
#include <iostream>
#include <memory>
#include <scoped_allocator>

#include <metall/container/string.hpp>
#include <metall/container/vector.hpp>
#include <metall/metall.hpp>

template <class Alloc>
struct tagged_value {
  using allocator_type = Alloc;
  using tag_type = metall::container::basic_string<
      char, std::char_traits<char>, typename std::allocator_traits<Alloc>::template rebind_alloc<char>>;

  explicit tagged_value(const allocator_type& a = allocator_type()) : tag(a) {}
  tagged_value(const tagged_value&) = default;
  tagged_value(tagged_value&&) = default;
  tagged_value(const tagged_value& o, const allocator_type& a) : tag(o.tag, a), value(o.value) {}
  tagged_value(tagged_value&& o, const allocator_type& a) : tag(std::move(o.tag), a), value(o.value) {}
  tagged_value& operator=(const tagged_value&) = default;
  tagged_value& operator=(tagged_value&&) = default;

  tag_type tag;
  double value = 0;
};

template <class T>
using heap_alloc = metall::manager::allocator_type<T>;
using entry = tagged_value<heap_alloc<char>>;
using entries = metall::container::vector<entry, std::scoped_allocator_adaptor<heap_alloc<entry>>>;

int main() {
  {
    metall::manager manager(metall::create_only, "datastore");
    entries* v = manager.construct<entries>("entries")(manager.get_allocator());
    v->resize(2);
    v->at(0).tag = "temperature, a tag longer than the small-string buffer";
    v->at(0).value = 21.5;
    v->at(1).tag = "pressure";
    v->at(1).value = 1013;
  }
  metall::manager manager(metall::open_read_only, "datastore");
  for (const entry& e : *manager.find<entries>("entries").first) std::cout << e.tag << " = " << e.value << std::endl;
  return 0;
}
