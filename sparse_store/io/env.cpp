#include "pheap/env.hpp"

#include <stdexcept>
#include <string>

#include "pheap/error.hpp"

namespace pheap::env {

[[noreturn]] void bad_env(const char* var, const std::string& value, const std::string& why) {
  throw error(errc::invalid_argument, "", std::string("read ") + var,
              "bad value '" + value + "': " + why);
}

std::uint64_t parse_size(const char* var, const std::string& v) {
  if (v.empty()) bad_env(var, v, "empty");
  std::size_t pos = 0;
  unsigned long long n = 0;
  try {
    if (v[0] == '-') throw std::invalid_argument("negative");
    n = std::stoull(v, &pos, 10);
  } catch (const std::exception&) {
    bad_env(var, v, "expected a number of bytes with an optional K/M/G/T suffix");
  }
  std::string suf = v.substr(pos);
  if (suf.size() == 2 && (suf[1] == 'B' || suf[1] == 'b')) suf.pop_back();
  if (suf.size() == 3 && (suf == "KiB" || suf == "MiB" || suf == "GiB" || suf == "TiB")) {
    suf = suf.substr(0, 1);
  }
  unsigned shift = 0;
  if (suf.empty()) {
    shift = 0;
  } else if (suf.size() == 1) {
    switch (suf[0]) {
      case 'k': case 'K': shift = 10; break;
      case 'm': case 'M': shift = 20; break;
      case 'g': case 'G': shift = 30; break;
      case 't': case 'T': shift = 40; break;
      default: bad_env(var, v, "unknown suffix (use K, M, G or T)");
    }
  } else {
    bad_env(var, v, "unknown suffix (use K, M, G or T)");
  }
  if (shift && n > (~0ull >> shift)) bad_env(var, v, "too large");
  return n << shift;
}

}  // namespace pheap::env
