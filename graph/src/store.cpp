// The graph datastore's creation (pheap/graph/store.hpp, create_datastore): the heap layer's
// creation with an initialisation step (pheap::manager(create_only, ..., init)), so the
// datastore appears under its name only once its first watermark holds the graph.
#include <pheap/graph/store.hpp>

#include <filesystem>
#include <system_error>

namespace pheap::graph {

void create_datastore(const std::string& path, const pheap::options& o, const std::string& name,
                      bool directed, weight_kind weights, std::size_t banks) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    throw pheap::error(pheap::errc::already_exists, path, "create graph " + name, "the path exists");
  }
  try {
    pheap::manager made(pheap::create_only, path, o, [&](pheap::manager& m) {
      switch (weights) {
        case weight_kind::none: open_or_create_graph<void>(m, name, directed, banks); break;
        case weight_kind::u64: open_or_create_graph<std::uint64_t>(m, name, directed, banks); break;
        case weight_kind::f32: open_or_create_graph<float>(m, name, directed, banks); break;
      }
    });
  } catch (const pheap::error& e) {
    // Told as a creation of the datastore, whatever step failed.
    const std::string what = e.what();
    const std::string prefix = "pheap: " + e.op() + " " + e.path() + ": ";
    const std::string cause = what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : what;
    throw pheap::error(e.code(), path, "create", cause, e.sys_errno());
  }
}

}  // namespace pheap::graph
