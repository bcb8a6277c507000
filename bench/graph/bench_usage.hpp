// bench/graph/bench_usage.hpp — the command line check both graph benchmarks start with: their
// options come in "--name value" pairs, so --help alone must not be read as a run of the suite.
#pragma once

#include <cstdio>
#include <cstring>

namespace pheap::bench {

// --help/-h anywhere: prints `usage` and returns 0; an option without its value: says so and
// returns 2; else -1 (go on parsing the pairs).
inline int usage_exit(int argc, char** argv, const char* usage) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(usage, stdout);
      return 0;
    }
  }
  if (argc % 2 == 0) {
    std::fprintf(stderr, "option %s needs a value\n%s", argv[argc - 1], usage);
    return 2;
  }
  return -1;
}

}  // namespace pheap::bench
