// METALL_LOGGER_EXTERN_C: the program provides metall_log() and receives the layer's messages
// (level and text) instead of the default stderr printer.
#define METALL_LOGGER_EXTERN_C
#include <iostream>
#include <string>

#include <metall/metall.hpp>

namespace {
int messages = 0;
}

extern "C" void metall_log(metall_log_level level, const char* file_name, size_t line_no, const char* message) {
  ++messages;
  const std::string text(message);
  std::cout << "level " << static_cast<int>(level) << (level == metall_error ? " (error)" : "")
            << ", names the datastore: " << (text.find("no-datastore") != std::string::npos)
            << ", has a source position: " << (file_name != nullptr && line_no > 0) << std::endl;
}

int main() {
  metall::manager m(metall::open_only, "no-datastore");
  std::cout << "sane: " << m.check_sanity() << ", messages: " << messages << std::endl;
  std::cout << "remove of a missing path: " << metall::manager::remove("no-datastore") << ", messages: " << messages
            << std::endl;
  return 0;
}
