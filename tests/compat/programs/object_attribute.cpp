// Metall's object attributes: read and set through the manager, then through an attribute
// accessor on the closed datastore.
#include <iostream>
#include <string>

#include <metall/metall.hpp>

int main() {
  {
    metall::manager manager(metall::create_only, "datastore");
    float* samples = manager.construct<float>("samples")[3](0.0f);
    std::string description;
    manager.get_instance_description(samples, &description);
    std::cout << manager.get_instance_name(samples) << ' ' << manager.get_instance_length(samples) << " '"
              << description << "'" << std::endl;
    manager.set_instance_description(samples, "three samples");
  }
  auto accessor = metall::manager::access_named_object_attribute("datastore");
  for (const auto& object : accessor) {
    std::cout << object.name() << ' ' << object.length() << " '" << object.description() << "'" << std::endl;
  }
  auto it = accessor.find("samples");
  accessor.set_description(it, "three samples, described offline");
  std::cout << it->name() << ' ' << it->length() << " '" << it->description() << "'" << std::endl;

  metall::manager manager(metall::open_read_only, "datastore");
  std::string description;
  manager.get_instance_description(manager.find<float>("samples").first, &description);
  std::cout << "stored: '" << description << "'" << std::endl;
  return 0;
}
