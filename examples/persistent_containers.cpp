// A persistent vector and map, reopened across two runs.
//
//   ./example_persistent_containers /tmp/my-heap    # first run: creates, fills, flushes
//   ./example_persistent_containers /tmp/my-heap    # second run: finds them, appends, prints
//
// Containers come from Boost.Container / Boost.Unordered with pheap::allocator (pointers are
// offset_ptr, so the heap may be mapped at another address next time). The pheap::container
// aliases nest: the strings that are the dictionary's keys live in the same heap.
#include <pheap/pheap.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>

using numbers = pheap::container::vector<std::uint64_t>;
using name_t = pheap::container::string;
using dictionary = pheap::container::map<name_t, std::uint64_t>;

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "/tmp/pheap-example-containers";
  const bool first_run = !std::filesystem::exists(path);
  pheap::options opt = pheap::options::from_env();  // the PHEAP_* variables, then our own choices
  opt.capacity = 1ull << 30;
  pheap::manager m = first_run ? pheap::manager(pheap::create_only, path, opt)
                               : pheap::manager(pheap::open_only, path);

  // find_or_construct: constructed on the first run, found (same contents) on later runs.
  auto* v = m.find_or_construct<numbers>("numbers")(m.get_allocator<std::uint64_t>());
  auto* d = m.find_or_construct<dictionary>("runs")(m.get_allocator<>());

  v->push_back(v->size() * 10);
  const name_t key(first_run ? "first" : "later", m.get_allocator<char>());
  (*d)[key] += 1;

  m.flush();  // both containers' new contents in one atomic watermark

  std::printf("%s run: numbers =", first_run ? "first" : "another");
  for (auto x : *v) std::printf(" %llu", static_cast<unsigned long long>(x));
  std::printf("; runs =");
  for (const auto& [k, n] : *d) std::printf(" %s:%llu", k.c_str(), static_cast<unsigned long long>(n));
  std::printf("\n");
  return 0;
}
