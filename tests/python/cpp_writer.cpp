// pheap-py-test-writer — the C++ side of the Python tests (python/tests): a C++ program that
// makes objects the Python package must open, and a writer that holds a datastore.
//
//   pheap-py-test-writer vectors PATH   creates PATH with pheap::container::vector<T> objects
//                                       (dv: double 0, 0.5, ..., 49.5; iv: int32 -1..-10;
//                                       uv: uint64 0..999), an array fa: float[8] = 0.25 each,
//                                       and pair: a std::pair<int, int> (not numeric); prints
//                                       "made"
//   pheap-py-test-writer hold PATH      opens PATH read-write, prints "holding" and waits for
//                                       its standard input to close (or a signal)
#include <pheap/pheap.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: pheap-py-test-writer vectors|hold PATH\n");
    return 2;
  }
  const std::string cmd = argv[1], path = argv[2];
  try {
    if (cmd == "vectors") {
      pheap::options o;
      o.capacity = 1ull << 30;
      pheap::manager m(pheap::create_only, path, o);
      auto* dv = m.construct<pheap::container::vector<double>>("dv")(m.get_allocator<>());
      for (int i = 0; i < 100; ++i) dv->push_back(i * 0.5);
      auto* iv = m.construct<pheap::container::vector<std::int32_t>>("iv")(m.get_allocator<>());
      for (int i = 1; i <= 10; ++i) iv->push_back(-i);
      auto* uv = m.construct<pheap::container::vector<std::uint64_t>>("uv")(m.get_allocator<>());
      for (std::uint64_t i = 0; i < 1000; ++i) uv->push_back(i);
      m.construct<float>("fa")[8](0.25f);
      m.construct<std::pair<int, int>>("pair")(1, 2);
      m.flush();
      std::printf("made\n");
      return 0;
    }
    if (cmd == "hold") {
      pheap::manager m(pheap::open_only, path);
      std::printf("holding\n");
      std::fflush(stdout);
      while (std::getchar() != EOF) {
      }
      return 0;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pheap-py-test-writer: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "pheap-py-test-writer: unknown command %s\n", cmd.c_str());
  return 2;
}
