// The C API (include/pheap/pheap.h) over pheap::manager.
//
// Every entry point runs its body through `call`, which catches everything: a pheap::error
// becomes its pheap_errc and its what() (the message the C++ API carries), std::bad_alloc
// PHEAP_ENOMEM, anything else PHEAP_EUNKNOWN with its what(). Nothing unwinds into C.
#include <pheap/pheap.h>

#include <pheap/pheap.hpp>

#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct pheap_manager {
  pheap::manager m;
};

struct pheap_objects {
  struct entry {
    std::string name, type_name, description;
    std::size_t length, type_size;
    void* address;
    std::uint64_t offset;
  };
  std::vector<entry> entries;
  std::size_t next = 0;
};

namespace {

struct thread_error {
  int code = PHEAP_OK;
  std::string message;
};
thread_local thread_error t_error;

void set_ok() noexcept {
  t_error.code = PHEAP_OK;
  t_error.message.clear();
}

void set_error(int code, const char* message) noexcept {
  t_error.code = code;
  try {
    t_error.message = message;
  } catch (...) {
    t_error.message.clear();  // no memory for the text: the code still tells
  }
}

int code_of(pheap::errc e) noexcept {
  // pheap_errc lists pheap::errc in order, after PHEAP_OK.
  return 1 + static_cast<int>(e);
}

// The heap is full: PHEAP_ENOMEM with a message naming the datastore (a bare std::bad_alloc
// from elsewhere, e.g. the process out of memory, gets a generic one).
class heap_full : public std::bad_alloc {
 public:
  heap_full(const pheap::manager& m, const std::string& op)
      : what_("pheap: " + op + " " + m.path() + ": the heap is full (capacity " +
              std::to_string(m.get_size()) + " bytes)") {}
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  std::string what_;
};

// A pheap::error of our own making, so C-side refusals carry the C++ message format.
[[noreturn]] void refuse(pheap::errc code, const std::string& path, const std::string& op,
                         const std::string& cause) {
  throw pheap::error(code, path, op, cause);
}

// Runs f() and returns its result; on any exception sets the thread's error and returns `fail`.
template <class R, class F>
R call(R fail, F&& f) noexcept {
  try {
    R r = f();
    set_ok();
    return r;
  } catch (const pheap::error& e) {
    set_error(code_of(e.code()), e.what());
  } catch (const heap_full& e) {
    set_error(PHEAP_ENOMEM, e.what());
  } catch (const std::bad_alloc&) {
    set_error(PHEAP_ENOMEM, "pheap: out of memory");
  } catch (const std::exception& e) {
    set_error(PHEAP_EUNKNOWN, e.what());
  } catch (...) {
    set_error(PHEAP_EUNKNOWN, "pheap: an exception of unknown type");
  }
  return fail;
}

const pheap::manager& need(const pheap_manager* m, const char* op) {
  if (m == nullptr) refuse(pheap::errc::invalid_argument, "", op, "the manager is NULL");
  return m->m;
}
pheap::manager& need(pheap_manager* m, const char* op) {
  if (m == nullptr) refuse(pheap::errc::invalid_argument, "", op, "the manager is NULL");
  return m->m;
}
std::string need_text(const char* s, const std::string& path, const char* op, const char* what) {
  if (s == nullptr) refuse(pheap::errc::invalid_argument, path, op, std::string(what) + " is NULL");
  return s;
}

// The PHEAP_* variables (pheap::options::from_env), then the non-zero fields of `o`.
pheap::options to_options(const pheap_options* o) {
  pheap::options opt = pheap::options::from_env();
  if (o == nullptr) return opt;
  if (o->capacity != 0) opt.capacity = o->capacity;
  if (o->page_size != 0) opt.page_size = o->page_size;
  if (o->buffer_size != 0) opt.pager.buffer_size = static_cast<std::size_t>(o->buffer_size);
  if (o->description != nullptr) opt.description = o->description;
  return opt;
}

template <class Mode>
pheap_manager* open_with(Mode mode, const char* path, const pheap_options* o, const char* op) {
  return call<pheap_manager*>(nullptr, [&] {
    const std::string p = need_text(path, "", op, "the path");
    return new pheap_manager{pheap::manager(mode, p, to_options(o))};
  });
}

// The named object `name` of any type: its directory entry, or nothing.
bool find_any(const pheap::manager& m, std::string_view name, pheap::object_info& out) {
  const std::optional<pheap::object_info> i = m.find_info(name);
  if (i) out = *i;
  return i.has_value();
}

}  // namespace

extern "C" {

int pheap_errcode(void) { return t_error.code; }
const char* pheap_errmsg(void) { return t_error.message.c_str(); }

const char* pheap_errc_name(int code) {
  if (code == PHEAP_OK) return "ok";
  if (code == PHEAP_ENOMEM) return "out of memory";
  if (code > PHEAP_OK && code < PHEAP_ENOMEM) return pheap::to_string(static_cast<pheap::errc>(code - 1));
  return "unknown";
}

pheap_manager* pheap_create(const char* path, const pheap_options* opt) {
  return open_with(pheap::create_only, path, opt, "create");
}
pheap_manager* pheap_open(const char* path, const pheap_options* opt) {
  return open_with(pheap::open_only, path, opt, "open");
}
pheap_manager* pheap_open_read_only(const char* path, const pheap_options* opt) {
  return open_with(pheap::open_read_only, path, opt, "open");
}

int pheap_close(pheap_manager* m) {
  if (m == nullptr) {
    set_ok();
    return 0;
  }
  // The destructor flushes but never throws (it reports on stderr): flush first, so that a
  // failing final flush is this call's error; the manager goes either way.
  std::unique_ptr<pheap_manager> owned(m);
  return call<int>(-1, [&] {
    if (!owned->m.read_only()) owned->m.flush();
    owned.reset();
    return 0;
  });
}

int64_t pheap_flush(pheap_manager* m) {
  return call<int64_t>(-1, [&] { return static_cast<int64_t>(need(m, "flush").flush()); });
}

int64_t pheap_refresh(pheap_manager* m) {
  return call<int64_t>(-1, [&] { return static_cast<int64_t>(need(m, "refresh").refresh()); });
}

int64_t pheap_snapshot(pheap_manager* m, const char* dst) {
  return call<int64_t>(-1, [&] {
    pheap::manager& mm = need(m, "snapshot");
    return static_cast<int64_t>(mm.snapshot(need_text(dst, mm.path(), "snapshot", "the destination")));
  });
}

int pheap_remove(const char* path) {
  return call<int>(-1, [&] {
    pheap::manager::remove(need_text(path, "", "remove", "the path"));
    return 0;
  });
}

int pheap_consistent(const char* path) {
  set_ok();
  return path != nullptr && pheap::manager::consistent(path) ? 1 : 0;
}

void* pheap_aligned_malloc(pheap_manager* m, size_t size, size_t align) {
  return call<void*>(nullptr, [&]() -> void* {
    pheap::manager& mm = need(m, "allocate");
    if (size == 0) refuse(pheap::errc::invalid_argument, mm.path(), "allocate", "size 0");
    if (align == 0 || (align & (align - 1)) != 0 || align > 4096) {
      refuse(pheap::errc::invalid_argument, mm.path(), "allocate",
             "alignment " + std::to_string(align) + " is not a power of two <= 4096");
    }
    void* p = mm.allocate_aligned(size, align);
    if (p == nullptr) throw heap_full(mm, "allocate");
    return p;
  });
}

void* pheap_malloc(pheap_manager* m, size_t size) {
  return call<void*>(nullptr, [&]() -> void* {
    pheap::manager& mm = need(m, "allocate");
    if (size == 0) refuse(pheap::errc::invalid_argument, mm.path(), "allocate", "size 0");
    void* p = mm.allocate(size);
    if (p == nullptr) throw heap_full(mm, "allocate");
    return p;
  });
}

int pheap_free(pheap_manager* m, void* p) {
  return call<int>(-1, [&] {
    need(m, "deallocate").deallocate(p);
    return 0;
  });
}

void* pheap_named_malloc(pheap_manager* m, const char* name, size_t size) {
  return call<void*>(nullptr, [&]() -> void* {
    pheap::manager& mm = need(m, "construct");
    const std::string n = need_text(name, mm.path(), "construct", "the name");
    if (size == 0) refuse(pheap::errc::invalid_argument, mm.path(), "construct " + n, "size 0");
    void* p = nullptr;
    try {
      p = mm.construct<unsigned char>(n)[size]();
    } catch (const std::bad_alloc&) {
      throw heap_full(mm, "construct " + n);
    }
    if (p == nullptr) {
      refuse(pheap::errc::already_exists, mm.path(), "construct " + n,
             "an object named '" + n + "' exists");
    }
    return p;
  });
}

void* pheap_find(pheap_manager* m, const char* name, size_t* size) {
  if (size != nullptr) *size = 0;
  return call<void*>(nullptr, [&]() -> void* {
    const pheap::manager& mm = need(m, "find");
    const std::string n = need_text(name, mm.path(), "find", "the name");
    pheap::object_info i{};
    if (!find_any(mm, n, i)) {
      refuse(pheap::errc::not_found, mm.path(), "find " + n, "no object named '" + n + "'");
    }
    if (size != nullptr) *size = i.length * i.type_size;
    return i.value;
  });
}

int pheap_named_free(pheap_manager* m, const char* name) {
  return call<int>(-1, [&] {
    pheap::manager& mm = need(m, "destroy");
    const std::string n = need_text(name, mm.path(), "destroy", "the name");
    pheap::object_info i{};
    if (!find_any(mm, n, i)) {
      refuse(pheap::errc::not_found, mm.path(), "destroy " + n, "no object named '" + n + "'");
    }
    if (i.type_name != pheap::type_name<unsigned char>() || i.type_size != 1) {
      refuse(pheap::errc::type_mismatch, mm.path(), "destroy " + n,
             "object '" + n + "' has type '" + std::string(i.type_name) +
                 "', not a byte array of pheap_named_malloc: its destructor cannot run from C");
    }
    mm.destroy<unsigned char>(n);
    return 0;
  });
}

pheap_objects* pheap_objects_begin(pheap_manager* m) {
  return call<pheap_objects*>(nullptr, [&] {
    const pheap::manager& mm = need(m, "list objects");
    auto it = std::make_unique<pheap_objects>();
    for (auto o = mm.named_begin(); o != mm.named_end(); ++o) {
      const pheap::object_info i = *o;
      it->entries.push_back({std::string(i.name), std::string(i.type_name), std::string(i.description),
                             i.length, i.type_size, i.value, i.offset});
    }
    return it.release();
  });
}

int pheap_objects_next(pheap_objects* it, pheap_object* out) {
  return call<int>(-1, [&] {
    if (it == nullptr || out == nullptr) {
      refuse(pheap::errc::invalid_argument, "", "list objects", "the iterator or the output is NULL");
    }
    if (it->next >= it->entries.size()) return 0;
    const auto& e = it->entries[it->next++];
    out->name = e.name.c_str();
    out->type_name = e.type_name.c_str();
    out->length = e.length;
    out->type_size = e.type_size;
    out->size = e.length * e.type_size;
    out->address = e.address;
    out->offset = e.offset;
    out->description = e.description.c_str();
    return 1;
  });
}

void pheap_objects_end(pheap_objects* it) {
  delete it;
  set_ok();
}

uint64_t pheap_to_offset(const pheap_manager* m, const void* p) {
  return call<uint64_t>(PHEAP_NO_OFFSET, [&] {
    const pheap::manager& mm = need(m, "to_offset");
    const auto base = reinterpret_cast<std::uintptr_t>(mm.get_address());
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    if (p == nullptr || at < base || at - base >= mm.get_size()) {
      refuse(pheap::errc::invalid_argument, mm.path(), "to_offset", "the address is not in the heap");
    }
    return static_cast<uint64_t>(at - base);
  });
}

void* pheap_from_offset(const pheap_manager* m, uint64_t offset) {
  return call<void*>(nullptr, [&] {
    const pheap::manager& mm = need(m, "from_offset");
    if (offset >= mm.get_size()) {
      refuse(pheap::errc::invalid_argument, mm.path(), "from_offset",
             "offset " + std::to_string(offset) + " is beyond the heap's capacity of " +
                 std::to_string(mm.get_size()) + " bytes");
    }
    return static_cast<void*>(static_cast<unsigned char*>(mm.get_address()) + offset);
  });
}

const char* pheap_path(const pheap_manager* m) {
  return call<const char*>(nullptr, [&] { return need(m, "path").path().c_str(); });
}
int pheap_read_only(const pheap_manager* m) {
  return call<int>(-1, [&] { return need(m, "read_only").read_only() ? 1 : 0; });
}
int64_t pheap_epoch(const pheap_manager* m) {
  return call<int64_t>(-1, [&] { return static_cast<int64_t>(need(m, "epoch").epoch()); });
}
uint64_t pheap_capacity(const pheap_manager* m) {
  return call<uint64_t>(0, [&] { return static_cast<uint64_t>(need(m, "capacity").get_size()); });
}
int pheap_sound(const pheap_manager* m) {
  return call<int>(-1, [&] { return need(m, "consistent").consistent() ? 1 : 0; });
}

int pheap_guard_faults(void (*fn)(void* ctx), void* ctx) {
  return call<int>(-1, [&] {
    if (fn == nullptr) refuse(pheap::errc::invalid_argument, "", "guard_faults", "the function is NULL");
    pheap::guard_faults([&] { fn(ctx); });
    return 0;
  });
}

}  // extern "C"
