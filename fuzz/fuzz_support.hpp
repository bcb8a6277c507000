// fuzz/fuzz_support.hpp — what every parser fuzzer and the seed maker share.
#pragma once

#include <cstdlib>

#include "pheap/sparse_store.hpp"

namespace pheap::fuzz {

// A property the parser promised does not hold: abort, so libFuzzer records the input.
inline void require(bool ok) {
  if (!ok) std::abort();
}

// The datastore uuid the seeds carry (make_seeds.cpp) and the map and directory fuzzers expect.
inline constexpr uuid kFuzzId = {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x41, 0x11,
                                 0x91, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11};

}  // namespace pheap::fuzz
