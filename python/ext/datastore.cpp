#include "datastore.hpp"

#include <pheap/pheap.hpp>
#include <pheap/sparse_store.hpp>

#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "dtypes.hpp"
#include "errors.hpp"

namespace pyheap {

namespace nb = nanobind;
using namespace nb::literals;

namespace {

// ---- options ------------------------------------------------------------------------------

// The PHEAP_* variables (pheap::options::from_env), then the keyword arguments.
pheap::options options_from(const nb::kwargs& kw, bool creating, const std::string& path) {
  pheap::options o = pheap::options::from_env();
  for (auto [k, v] : kw) {
    const std::string key = nb::cast<std::string>(k);
    if (v.is_none()) continue;
    if (key == "buffer_size") {
      o.pager.buffer_size = nb::cast<std::size_t>(v);
    } else if (creating && key == "capacity") {
      o.capacity = nb::cast<std::uint64_t>(v);
    } else if (creating && key == "page_size") {
      o.page_size = nb::cast<std::uint32_t>(v);
    } else if (creating && key == "chunk_size") {
      o.chunk_size = nb::cast<std::uint64_t>(v);
    } else if (creating && key == "segment_size") {
      o.segment_size = nb::cast<std::uint64_t>(v);
    } else if (creating && key == "description") {
      o.description = nb::cast<std::string>(v);
    } else {
      throw py_error("invalid_argument", path, creating ? "create" : "open",
                     "unknown option '" + key + "' (" +
                         (creating ? "create takes capacity, page_size, chunk_size, segment_size, "
                                     "buffer_size, description"
                                   : "open takes buffer_size") +
                         ")");
    }
  }
  return o;
}

// ---- the directory ------------------------------------------------------------------------

bool find_any(const pheap::manager& m, std::string_view name, pheap::object_info& out) {
  const std::optional<pheap::object_info> i = m.find_info(name);
  if (i) out = *i;
  return i.has_value();
}

// The element type of a numeric array or vector object, else pheap.TypeMismatchError naming
// the object and its recorded type.
const numeric& numeric_object(const store& s, const std::string& name, const pheap::object_info& i,
                              bool* is_vector) {
  const numeric* n = numeric_of_type(i.type_name, i.type_size, is_vector);
  if (n == nullptr) {
    throw pheap::error(pheap::errc::type_mismatch, s.path(), "view " + name,
                       "object '" + name + "' has type '" + std::string(i.type_name) + "' (" +
                           std::to_string(i.type_size) +
                           " bytes), which is neither an array nor a pheap::container::vector of a "
                           "NumPy type (" + numpy_names() + ")");
  }
  return *n;
}

const numeric& numeric_dtype(const nb::handle& dtype, const std::string& path, const std::string& op) {
  const std::string name = nb::cast<std::string>(nb::module_::import_("numpy").attr("dtype")(dtype).attr("name"));
  const numeric* n = numeric_of_numpy(name);
  if (n == nullptr) {
    throw py_error("type_mismatch", path, op, "dtype " + name + " is not one pheap stores (" + numpy_names() + ")");
  }
  return *n;
}

// "shape=3x4" in a description: the shape, when it multiplies to `length`.
std::optional<std::vector<std::size_t>> shape_of(std::string_view description, std::size_t length) {
  constexpr std::string_view key = "shape=";
  if (description.rfind(key, 0) != 0) return std::nullopt;
  std::vector<std::size_t> shape;
  std::string_view rest = description.substr(key.size());
  std::size_t product = 1;
  while (!rest.empty()) {
    std::size_t v = 0;
    auto r = std::from_chars(rest.data(), rest.data() + rest.size(), v);
    if (r.ec != std::errc()) return std::nullopt;
    shape.push_back(v);
    product *= v;
    rest.remove_prefix(static_cast<std::size_t>(r.ptr - rest.data()));
    if (!rest.empty() && rest.front() != 'x') return std::nullopt;
    if (!rest.empty()) rest.remove_prefix(1);
  }
  if (shape.empty() || product != length) return std::nullopt;
  return shape;
}

std::string shape_text(const std::vector<std::size_t>& shape) {
  std::string s = "shape=";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

// A NumPy view of `count` elements of type n at p (C order, `shape`), owned by the store.
nb::object make_view(const store_ptr& s, const void* key, void* p, const numeric& n,
                     const std::vector<std::size_t>& shape) {
  std::size_t count = 1;
  for (std::size_t d : shape) count *= d;
  {
    nb::gil_scoped_release nogil;
    s->touch(p, count * n.size);  // damaged pages: CorruptError now, not SIGBUS later
  }
  nb::capsule owner = view_owner(s, key);
  if (s->read_only()) {
    return nb::ndarray<nb::numpy, nb::ro>(p, shape.size(), shape.data(), owner, nullptr, n.dt).cast();
  }
  return nb::ndarray<nb::numpy>(p, shape.size(), shape.data(), owner, nullptr, n.dt).cast();
}



nb::dict watermark_dict(const std::string& path, const pheap::watermark_info& w) {
  nb::dict d;
  d["datastore"] = path;
  d["uuid"] = w.uuid;
  d["store_format"] = w.store_format;
  d["writer_version"] = pheap::version_string(w.writer_version);
  d["epoch"] = w.epoch;
  d["description"] = w.description;
  d["capacity"] = w.capacity;
  d["page_size"] = w.page_size;
  d["chunk_size"] = w.chunk_size;
  d["created"] = pheap::utc_time_string(w.created_ns);
  d["disk_bytes"] = w.disk_bytes;
  return d;
}

// The processes reading the datastore through its reader table now, oldest watermark first, as
// `pheap info --json` lists them ("this": the process calling).
nb::list readers_list(const std::string& path) {
  std::vector<pheap::reader_info> rs = pheap::sparse_store::readers(path);
  std::sort(rs.begin(), rs.end(), [](const auto& x, const auto& y) { return x.epoch < y.epoch; });
  nb::list a;
  for (const pheap::reader_info& r : rs) {
    nb::dict d;
    d["pid"] = r.pid;
    d["epoch"] = r.epoch;
    d["since"] = pheap::utc_time_string(r.since_unix_ns);
    d["since_ns"] = r.since_unix_ns;
    d["pinned_bytes"] = r.pinned_bytes;
    d["expired"] = r.expired;
    d["this"] = r.pid == static_cast<std::uint32_t>(::getpid());
    a.append(d);
  }
  return a;
}

// What `pheap info --json` prints for an open manager (tools/pheap/pheap_tool.cpp, cmd_info);
// huge_pages_asked: what the open asked of huge pages.
nb::dict info_of(const pheap::manager& m, const std::string& path, pheap::huge_pages_mode huge_pages_asked) {
  const pheap::manager_stats s = m.stats();
  const pheap::watermark_info w = m.watermark();
  nb::dict d = watermark_dict(path, w);
  d["source"] = "open";
  d["live_bytes"] = s.store.live_bytes;
  nb::dict chunks, allocated, objects;
  chunks["in_use"] = s.chunks_in_use;
  chunks["total"] = s.num_chunks;
  allocated["small_bytes"] = s.small_bytes;
  allocated["large_bytes"] = s.large_bytes;
  objects["named"] = s.named_objects;
  objects["unique"] = s.unique_objects;
  objects["anonymous"] = s.anonymous_objects;
  d["chunks"] = chunks;
  d["allocated"] = allocated;
  d["objects"] = objects;
  if (s.store.pin_limit != 0) {  // read through the reader table (format 4)
    d["pin_limit"] = s.store.pin_limit;
    d["pinned_bytes"] = s.store.pinned_bytes;
    d["readers_expired"] = s.store.readers_expired;
  }
  d["readers"] = readers_list(path);
  const pheap::pager_stats& p = s.pager;
  nb::dict huge;
  huge["asked"] = pheap::to_string(huge_pages_asked);
  huge["in_force"] = p.huge_pages;
  huge["why"] = p.huge_pages_why;
  huge["fills"] = p.huge_fills;
  huge["fallback_fills"] = p.huge_fallback_fills;
  huge["split"] = p.huge_fallback_split;
  huge["promotions"] = p.huge_promotions;
  huge["mapped_bytes"] = p.huge_mapped_bytes;
  d["huge_pages"] = huge;
  return d;
}

// ---- Vector -----------------------------------------------------------------------------------

class vector_handle {
 public:
  vector_handle(store_ptr s, std::string name, const numeric& n) : s_(std::move(s)), name_(std::move(name)), n_(n) {}

  std::size_t size() const {
    shared_guard g(*s_);
    return n_.length(find());
  }
  std::size_t capacity() const {
    shared_guard g(*s_);
    return n_.capacity(find());
  }
  nb::object dtype() const { return nb::module_::import_("numpy").attr("dtype")(n_.numpy); }
  const std::string& name() const noexcept { return name_; }

  // A view of the elements now (len(self) of them).
  nb::object view() const {
    shared_guard g(*s_);
    void* v = find();
    const std::vector<std::size_t> shape{n_.length(v)};
    return make_view(s_, v, n_.data(v), n_, shape);
  }

  void extend(const nb::handle& values) {
    nb::object a = nb::module_::import_("numpy").attr("ascontiguousarray")(values, "dtype"_a = n_.numpy).attr("reshape")(-1);
    auto arr = nb::cast<nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>>(a);
    shared_guard g(*s_);
    pheap::manager& m = s_->writable("append to " + name_);
    (void)m;
    void* v = find();
    grow_check(v, arr.size());
    n_.append(v, arr.data(), arr.size());
  }

  void append(const nb::handle& value) { extend(nb::module_::import_("numpy").attr("asarray")(value)); }

  void reserve(std::size_t k) {
    shared_guard g(*s_);
    s_->writable("reserve " + name_);
    void* v = find();
    if (k > n_.capacity(v)) {
      grow_check(v, k - n_.length(v));
      n_.reserve(v, k);
    }
  }

 private:
  void* find() const {
    pheap::manager& m = s_->manager();
    void* v = n_.find_vector(m, name_);
    if (v == nullptr) {
      throw pheap::error(pheap::errc::not_found, s_->path(), "vector " + name_, "no vector named '" + name_ + "'");
    }
    return v;
  }
  // Growing past the capacity reallocates: refused while views of the old elements live.
  void grow_check(void* v, std::size_t more) const {
    if (n_.length(v) + more <= n_.capacity(v)) return;
    if (const long k = s_->exports(v); k > 0) {
      throw nb::buffer_error(("pheap: append to " + name_ + " " + s_->path() + ": " + std::to_string(k) +
                              " NumPy view(s) of its elements are alive and growing the vector moves them; "
                              "delete the views (or reserve() before taking them)")
                                 .c_str());
    }
  }

  store_ptr s_;
  std::string name_;
  const numeric& n_;
};

// ---- Datastore ----------------------------------------------------------------------------------

class datastore {
 public:
  explicit datastore(store_ptr s) : s_(std::move(s)) {}

  const store_ptr& state() const noexcept { return s_; }

  std::uint64_t flush() {
    nb::gil_scoped_release nogil;
    std::unique_lock<std::shared_mutex> l(s_->mu());
    return s_->writable("flush").flush();
  }

  std::uint64_t snapshot(const std::string& dst) {
    nb::gil_scoped_release nogil;
    std::unique_lock<std::shared_mutex> l(s_->mu());
    return s_->manager().snapshot(dst);
  }

  void close() {
    nb::gil_scoped_release nogil;
    std::unique_lock<std::shared_mutex> l(s_->mu());
    s_->close();
  }

  std::uint64_t epoch() const {
    shared_guard g(*s_);
    return s_->manager().epoch();
  }

  nb::dict info() const {
    shared_guard g(*s_);
    return info_of(s_->manager(), s_->path(), s_->huge_pages_asked());
  }

  std::uint64_t refresh() {
    nb::gil_scoped_release nogil;
    std::unique_lock<std::shared_mutex> l(s_->mu());
    return s_->refresh();
  }

  nb::dict names() const {
    shared_guard g(*s_);
    const pheap::manager& m = s_->manager();
    nb::dict d;
    for (auto it = m.named_begin(); it != m.named_end(); ++it) {
      const pheap::object_info i = *it;
      d[nb::str(i.name.data(), i.name.size())] = nb::str(i.type_name.data(), i.type_name.size());
    }
    return d;
  }

  bool contains(const std::string& name) const {
    shared_guard g(*s_);
    pheap::object_info i{};
    return find_any(s_->manager(), name, i);
  }

  nb::object create_array(const std::string& name, const nb::handle& shape_arg, const nb::handle& dtype) {
    const numeric& n = numeric_dtype(dtype, s_->path(), "create_array " + name);
    std::vector<std::size_t> shape;
    if (PyLong_Check(shape_arg.ptr())) {
      shape.push_back(nb::cast<std::size_t>(shape_arg));
    } else {
      shape = nb::cast<std::vector<std::size_t>>(shape_arg);
    }
    std::size_t count = 1;
    for (std::size_t d : shape) count *= d;
    if (shape.empty() || count == 0) {
      throw py_error("invalid_argument", s_->path(), "create_array " + name, "the shape has no elements");
    }
    shared_guard g(*s_);
    pheap::manager& m = s_->writable("create_array " + name);
    void* p = n.make_array(m, name, count);
    if (p == nullptr) {
      throw pheap::error(pheap::errc::already_exists, s_->path(), "create_array " + name,
                         "an object named '" + name + "' exists");
    }
    if (shape.size() > 1) m.set_instance_description(static_cast<const unsigned char*>(p), shape_text(shape));
    return make_view(s_, p, p, n, shape);
  }

  nb::object array(const std::string& name) const {
    shared_guard g(*s_);
    const pheap::manager& m = s_->manager();
    pheap::object_info i{};
    if (!find_any(m, name, i)) {
      throw pheap::error(pheap::errc::not_found, s_->path(), "array " + name, "no object named '" + name + "'");
    }
    bool is_vector = false;
    const numeric& n = numeric_object(*s_, name, i, &is_vector);
    if (is_vector) {
      const std::vector<std::size_t> shape{n.length(i.value)};
      return make_view(s_, i.value, n.data(i.value), n, shape);
    }
    const std::vector<std::size_t> shape = shape_of(i.description, i.length).value_or(std::vector<std::size_t>{i.length});
    return make_view(s_, i.value, i.value, n, shape);
  }

  vector_handle create_vector(const std::string& name, const nb::handle& dtype, const nb::handle& data) {
    const numeric& n = numeric_dtype(dtype, s_->path(), "create_vector " + name);
    {
      shared_guard g(*s_);
      pheap::manager& m = s_->writable("create_vector " + name);
      if (n.make_vector(m, name) == nullptr) {
        throw pheap::error(pheap::errc::already_exists, s_->path(), "create_vector " + name,
                           "an object named '" + name + "' exists");
      }
    }
    vector_handle v(s_, name, n);
    if (!data.is_none()) v.extend(data);
    return v;
  }

  vector_handle vector(const std::string& name) const {
    shared_guard g(*s_);
    pheap::object_info i{};
    if (!find_any(s_->manager(), name, i)) {
      throw pheap::error(pheap::errc::not_found, s_->path(), "vector " + name, "no object named '" + name + "'");
    }
    bool is_vector = false;
    const numeric& n = numeric_object(*s_, name, i, &is_vector);
    if (!is_vector) {
      throw pheap::error(pheap::errc::type_mismatch, s_->path(), "vector " + name,
                         "object '" + name + "' is an array of " + n.numpy + " ('" + std::string(i.type_name) +
                             "'), not a growable pheap::container::vector: use array()");
    }
    return vector_handle(s_, name, n);
  }

  void destroy(const std::string& name) {
    nb::gil_scoped_release nogil;
    std::unique_lock<std::shared_mutex> l(s_->mu());
    pheap::manager& m = s_->writable("destroy " + name);
    pheap::object_info i{};
    if (!find_any(m, name, i)) {
      throw pheap::error(pheap::errc::not_found, s_->path(), "destroy " + name, "no object named '" + name + "'");
    }
    bool is_vector = false;
    const numeric& n = numeric_object(*s_, name, i, &is_vector);
    if (const long k = s_->exports(i.value); k > 0) {
      throw nb::buffer_error(("pheap: destroy " + name + " " + s_->path() + ": " + std::to_string(k) +
                              " NumPy view(s) of it are alive; delete them first")
                                 .c_str());
    }
    if (is_vector) {
      n.destroy_vector(m, name);
    } else {
      n.destroy_array(m, name);
    }
  }

 private:
  store_ptr s_;
};

store_ptr open_or_create(const std::string& path, bool create, bool read_only, const pheap::options& o) {
  nb::gil_scoped_release nogil;
  return open_store(path, create, read_only, o);
}

}  // namespace

void register_datastore(nb::module_& m) {
  nb::class_<vector_handle>(m, "Vector",
      "A growable pheap::container::vector<T> of a NumPy type, in the heap.\n\n"
      "append/extend add elements (converted to the vector's dtype); view() is a NumPy array of\n"
      "the elements as they are now, zero-copy. Growing past the capacity moves the elements, so\n"
      "it is refused (BufferError) while a view is alive: reserve() first, or drop the views.")
      .def_prop_ro("name", &vector_handle::name, "The object's name.")
      .def_prop_ro("dtype", &vector_handle::dtype, "The element type (numpy.dtype).")
      .def_prop_ro("capacity", &vector_handle::capacity, "Elements that fit before the next reallocation.")
      .def("__len__", &vector_handle::size)
      .def("append", &vector_handle::append, "value"_a, "Appends one element.")
      .def("extend", &vector_handle::extend, "values"_a, "Appends every element of an array-like.")
      .def("reserve", &vector_handle::reserve, "capacity"_a, "Makes room for `capacity` elements.")
      .def("view", &vector_handle::view, "A NumPy view of the elements now (zero-copy).")
      .def("__array__", [](const vector_handle& v, nb::handle dtype, nb::handle copy) {
             nb::object a = v.view();
             if (!dtype.is_none()) a = a.attr("astype")(dtype);
             else if (!copy.is_none() && nb::cast<bool>(copy)) a = a.attr("copy")();
             return a;
           }, "dtype"_a = nb::none(), "copy"_a = nb::none());

  nb::class_<datastore>(m, "Datastore",
      "An open pheap datastore (pheap.create / pheap.open); a context manager that closes it.\n\n"
      "flush() makes every write so far durable atomically and returns the new watermark (epoch);\n"
      "after a crash the datastore opens at the last completed flush. Arrays are NumPy views\n"
      "into the heap: they keep the datastore alive, and after close() they stay valid until\n"
      "deleted (the datastore stays locked until then).")
      .def_prop_ro("path", [](const datastore& d) { return d.state()->path(); }, "The datastore's path.")
      .def_prop_ro("read_only", [](const datastore& d) { return d.state()->read_only(); }, "Opened read-only.")
      .def_prop_ro("closed", [](const datastore& d) { return d.state()->closed(); }, "close() was called.")
      .def_prop_ro("epoch", &datastore::epoch, "The last watermark.")
      .def("flush", &datastore::flush, "Makes every write so far durable, atomically; returns the new epoch.")
      .def("snapshot", &datastore::snapshot, "dst"_a,
           "Flushes, then writes an independent datastore at `dst` (must not exist) holding that\n"
           "watermark; returns its epoch.")
      .def("close", &datastore::close,
           "Flushes (read-write) and closes the handle; live views keep the memory until deleted.")
      .def("__enter__", [](nb::handle self) { return nb::borrow(self); })
      .def("__exit__", [](datastore& d, nb::handle, nb::handle, nb::handle) { d.close(); },
           "exc_type"_a.none(), "exc"_a.none(), "tb"_a.none())
      .def("info", &datastore::info, "The fields of `pheap info --json` (tools/README.md).")
      .def("refresh", &datastore::refresh,
           "Read-only handles: moves to the datastore's newest watermark without closing, and\n"
           "returns its epoch (the same epoch: nothing new). Pages that did not change stay in\n"
           "memory. Refused (BufferError) while NumPy views of the datastore are alive: after the\n"
           "move they would read whatever the newer watermark holds at their address. Take the\n"
           "arrays again after it. pheap.InvalidArgumentError on a read-write handle.")
      .def("names", &datastore::names, "Every named object: name -> its recorded C++ type.")
      .def("__contains__", &datastore::contains, "name"_a)
      .def("create_array", &datastore::create_array, "name"_a, "shape"_a, "dtype"_a = "float64",
           "Creates a zero-filled named array and returns it as a NumPy view.")
      .def("array", &datastore::array, "name"_a,
           "A NumPy view of a numeric named array or pheap::container::vector<T> (dtype from its\n"
           "recorded type; another type is pheap.TypeMismatchError naming it).")
      .def("create_vector", &datastore::create_vector, "name"_a, "dtype"_a = "float64", "data"_a = nb::none(),
           "Creates an empty growable vector (pheap::container::vector<T>), filled from `data`.")
      .def("vector", &datastore::vector, "name"_a, "The growable vector `name` as a pheap.Vector.")
      .def("destroy", &datastore::destroy, "name"_a,
           "Frees a numeric array or vector (BufferError while views of it are alive).");

  m.def("create", [](const std::string& path, const nb::kwargs& kw) {
          return datastore(open_or_create(path, true, false, options_from(kw, true, path)));
        }, "path"_a, "options"_a,
        "Creates a datastore at `path` (must not exist) and opens it read-write.\n\n"
        "Options: capacity (heap bytes, default 64 GiB of address space), page_size (default\n"
        "64 KiB or PHEAP_PAGE_SIZE), chunk_size, segment_size, buffer_size (DRAM for pages,\n"
        "default automatic), description.");
  m.def("open", [](const std::string& path, bool read_only, const nb::kwargs& kw) {
          return datastore(open_or_create(path, false, read_only, options_from(kw, false, path)));
        }, "path"_a, "read_only"_a = false, "options"_a,
        "Opens a datastore (read-write: exclusive; read-only: shared). Option: buffer_size.");
  m.def("info", [](const std::string& path) {
          nb::gil_scoped_release nogil;
          try {
            const pheap::options o = pheap::options::from_env(pheap::options{});  // as the tool's
            const pheap::manager mm(pheap::open_read_only, path, o);
            nb::gil_scoped_acquire gil;
            return info_of(mm, path, o.pager.huge_pages);
          } catch (const pheap::error& e) {
            if (e.code() != pheap::errc::locked) throw;
          }
          const pheap::watermark_info w = pheap::manager::peek(path);
          nb::gil_scoped_acquire gil;
          nb::dict d = watermark_dict(path, w);
          d["source"] = "superblock";
          d["readers"] = readers_list(path);
          return d;
        }, "path"_a,
        "`pheap info --json` of a datastore (opened read-only, beside a writer if one holds it);\n"
        "where a read-only open is refused (format 3 under a writer), its last watermark from the\n"
        "superblock (source 'superblock').");
  m.def("remove", [](const std::string& path) {
          nb::gil_scoped_release nogil;
          pheap::manager::remove(path);
        }, "path"_a, "Deletes a datastore (refuses foreign directories and datastores in use).");
  m.def("consistent", [](const std::string& path) { return pheap::manager::consistent(path); }, "path"_a,
        "True iff `path` is a datastore this library opens.");
}

}  // namespace pyheap
