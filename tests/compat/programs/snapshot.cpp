// Metall's snapshots: a unique object changed between two snapshots; each snapshot and the
// original are checked with consistent() and opened read-only.
#include <iostream>
#include <string>

#include <metall/metall.hpp>

int main() {
  const std::string original = "datastore";
  const std::string before = "snapshot-before", after = "snapshot-after";
  {
    metall::manager manager(metall::create_only, original.c_str());
    double* level = manager.construct<double>(metall::unique_instance)(1.5);
    manager.snapshot(before.c_str());
    *level = 2.5;
    manager.snapshot(after.c_str());
    *level = 3.5;
  }
  for (const std::string& path : {before, after, original}) {
    if (!metall::manager::consistent(path.c_str())) {
      std::cerr << path << " is inconsistent" << std::endl;
      return 1;
    }
    metall::manager manager(metall::open_read_only, path.c_str());
    std::cout << path << ": " << *manager.find<double>(metall::unique_instance).first << std::endl;
  }
  return 0;
}
