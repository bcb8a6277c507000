// Metall's datastore description: through a manager, then through the static functions on a
// closed datastore.
#include <cassert>
#include <iostream>
#include <string>

#include <metall/metall.hpp>

int main() {
  {
    metall::manager manager(metall::create_only, "datastore");
    std::string text;
    const bool had = manager.get_description(&text);
    std::cout << "initially: " << had << " '" << text << "'" << std::endl;
    manager.set_description("a datastore of sensor readings");
    manager.get_description(&text);
    std::cout << text << std::endl;
  }
  metall::manager::set_description("datastore", "sensor readings, second revision");
  std::string text;
  metall::manager::get_description("datastore", &text);
  std::cout << text << std::endl;
  return 0;
}
