// Metall's logger controls: the log level and abort-on-critical, set before using a manager.
// A failed open is logged (to stderr) and reported by check_sanity().
#include <iostream>

#include <metall/metall.hpp>

int main() {
  metall::logger::set_log_level(metall::logger::level_filter::verbose);
  metall::logger::abort_on_critical_error(true);
  {
    metall::manager manager(metall::create_only, "datastore");
    std::cout << "created: " << manager.check_sanity() << std::endl;
  }
  metall::logger::set_log_level(metall::logger::level_filter::silent);
  metall::manager missing(metall::open_only, "no-such-datastore");
  std::cout << "missing opened: " << missing.check_sanity() << std::endl;
  return 0;
}
