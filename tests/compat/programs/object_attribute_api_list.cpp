// Every object-attribute call Metall documents: through the manager, through the named,
// unique and anonymous accessors (including one on a path that holds no datastore), and on the
// shared iterator type.
#include <iostream>
#include <string>

#include <metall/metall.hpp>

using iterator_t = metall::manager::const_named_iterator;

int main() {
  {
    metall::manager manager(metall::create_only, "datastore");
    short* named = manager.construct<short>("named")(1);
    manager.construct<short>(metall::unique_instance)(2);
    manager.construct<short>(metall::anonymous_instance)[2](3);

    std::string text;
    std::cout << manager.get_instance_name<short>(named) << ' '
              << (manager.get_instance_kind<short>(named) == metall::manager::instance_kind::named_kind) << ' '
              << manager.get_instance_length<short>(named) << ' '
              << manager.get_instance_description<short>(named, &text) << ' '
              << manager.set_instance_description<short>(named, "n") << ' ' << manager.is_instance_type<short>(named)
              << ' ' << manager.is_instance_type<int>(named) << std::endl;
    iterator_t it = manager.named_begin();
    std::cout << it->name() << ' ' << it->description() << ' ' << (++it == manager.named_end()) << std::endl;
    it = manager.unique_begin();
    std::cout << it->is_type<short>() << ' ' << (it != manager.unique_end()) << std::endl;
    it = manager.anonymous_begin();
    std::cout << it->length() << ' ' << (std::next(it) == manager.anonymous_end()) << std::endl;
  }

  auto named = metall::manager::access_named_object_attribute("datastore");
  std::cout << named.good() << ' ' << named.num_objects() << ' ' << named.count("named") << ' '
            << named.count("absent") << ' ' << (named.find("absent") == named.end()) << ' '
            << named.set_description("named", "n2") << ' ' << named.begin()->description() << std::endl;

  auto unique = metall::manager::access_unique_object_attribute("datastore");
  std::cout << unique.good() << ' ' << unique.num_objects() << ' ' << unique.count<short>(metall::unique_instance)
            << ' ' << unique.set_description<short>(metall::unique_instance, "u") << ' '
            << unique.find<short>(metall::unique_instance)->description() << std::endl;

  auto anonymous = metall::manager::access_anonymous_object_attribute("datastore");
  iterator_t a = anonymous.begin();
  std::cout << anonymous.good() << ' ' << anonymous.num_objects() << ' ' << anonymous.set_description(a, "a") << ' '
            << a->description() << ' ' << a->is_type<short>() << ' ' << (a->type_id() == unique.begin()->type_id())
            << std::endl;

  metall::logger::set_log_level(metall::logger::level_filter::silent);
  auto nothing = metall::manager::access_named_object_attribute("no-datastore-here");
  iterator_t end = nothing.end();
  std::cout << nothing.good() << ' ' << nothing.num_objects() << ' ' << (nothing.begin() == end) << " '"
            << end->name() << "' " << end->length() << ' ' << nothing.set_description(end, "x") << std::endl;
  return 0;
}
