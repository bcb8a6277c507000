// pheap/env.hpp — reading PHEAP_* environment variables.
// Every malformed value throws pheap::error(invalid_argument) naming the variable and value.
#pragma once

#include <cstdint>
#include <string>

namespace pheap::env {

[[noreturn]] void bad_env(const char* var, const std::string& value, const std::string& why);

// "65536", "64K", "64KiB", "1M", "2G", "1T" (powers of 1024).
std::uint64_t parse_size(const char* var, const std::string& value);

}  // namespace pheap::env
