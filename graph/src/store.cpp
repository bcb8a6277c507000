// The graph datastore's creation (pheap/graph/store.hpp, create_datastore).
#include <pheap/graph/store.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <system_error>

namespace pheap::graph {

void create_datastore(const std::string& path, const pheap::options& o, const std::string& name,
                      bool directed, weight_kind weights, std::size_t banks) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(path, ec)) {
    throw pheap::error(pheap::errc::already_exists, path, "create graph " + name, "the path exists");
  }
  const fs::path target = fs::absolute(path).lexically_normal();
  const fs::path tmp = target.parent_path() / ("." + target.filename().string() + ".pheap-graph-creating");
  fs::remove_all(tmp, ec);  // leftover of a creation that was killed; only ever ours
  try {
    pheap::manager m(pheap::create_only, tmp.string(), o);
    switch (weights) {
      case weight_kind::none: open_or_create_graph<void>(m, name, directed, banks); break;
      case weight_kind::u64: open_or_create_graph<std::uint64_t>(m, name, directed, banks); break;
      case weight_kind::f32: open_or_create_graph<float>(m, name, directed, banks); break;
    }
    m.flush();
  } catch (const pheap::error& e) {
    // The user knows the datastore by its name, not by the temporary one it is built under.
    fs::remove_all(tmp, ec);
    const std::string what = e.what();
    const std::string prefix = "pheap: " + e.op() + " " + e.path() + ": ";
    const std::string cause = what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : what;
    throw pheap::error(e.code(), path, "create", cause, e.sys_errno());
  }
  fs::rename(tmp, target);
  const int dfd = ::open(target.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);  // make the rename durable
    ::close(dfd);
  }
}

}  // namespace pheap::graph
