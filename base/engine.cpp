// default_engine(): the process-wide engine every layer uses unless handed another one.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "pheap/env.hpp"
#include "pheap/error.hpp"
#include "pheap/io.hpp"

namespace pheap::io {

namespace {

// PHEAP_IO_ENGINE=uring forces io_uring (its setup error is thrown, not papered over);
// =posix forces pread/pwrite; unset or empty picks io_uring and falls back to posix with one
// line on stderr giving the reason. Any other value is rejected (pheap/env.hpp).
std::shared_ptr<engine> choose_engine() {
  const auto want = env::word(env::var::io_engine);
  if (want == "posix") return make_posix_engine();
  if (want == "uring") return make_uring_engine();
  try {
    return make_uring_engine();
  } catch (const error& e) {
    if (e.code() != errc::unavailable) throw;
    std::fprintf(stderr, "pheap: io_uring unavailable (%s): using pread/pwrite\n", e.what());
    return make_posix_engine();
  }
}

}  // namespace

std::shared_ptr<engine> default_engine() {
  // Not a function-local static initialised by a throwing call: a failed choice (bad
  // PHEAP_IO_ENGINE) is reported to every caller, and the fallback line is printed once.
  static std::mutex mu;
  static std::shared_ptr<engine> instance;
  std::lock_guard<std::mutex> lock(mu);
  if (!instance) instance = choose_engine();
  return instance;
}

}  // namespace pheap::io
