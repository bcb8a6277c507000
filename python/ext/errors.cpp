#include "errors.hpp"

#include <nanobind/stl/string.h>

#include <pheap/error.hpp>
#include <pheap/graph/ingest.hpp>
#include <pheap/graph/types.hpp>

#include <exception>
#include <new>

namespace pyheap {

namespace nb = nanobind;

namespace {

const char* key_of(pheap::errc c) noexcept {
  switch (c) {
    case pheap::errc::io: return "io";
    case pheap::errc::no_space: return "no_space";
    case pheap::errc::not_found: return "not_found";
    case pheap::errc::already_exists: return "already_exists";
    case pheap::errc::not_a_datastore: return "not_a_datastore";
    case pheap::errc::newer_format: return "newer_format";
    case pheap::errc::older_format: return "older_format";
    case pheap::errc::corrupt: return "corrupt";
    case pheap::errc::locked: return "locked";
    case pheap::errc::read_only: return "read_only";
    case pheap::errc::invalid_argument: return "invalid_argument";
    case pheap::errc::type_mismatch: return "type_mismatch";
    case pheap::errc::unavailable: return "unavailable";
    case pheap::errc::poisoned: return "poisoned";
    case pheap::errc::stale: return "stale";
  }
  return "unknown";
}

std::string compose(const std::string& path, const std::string& op, const std::string& cause) {
  return "pheap: " + op + (path.empty() ? "" : " " + path) + ": " + cause;
}

void raise(const char* code, const char* message, const std::string& path, const std::string& op, int err) {
  // Called with the GIL held and no Python error set (nanobind's translator contract).
  try {
    nb::object make = nb::module_::import_("pheap._errors").attr("_make");
    nb::object e = make(code, message, path, op, err);
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(e.ptr())), e.ptr());
  } catch (nb::python_error& pe) {
    pe.restore();  // the error module itself failed: keep Python's error
  }
}

}  // namespace

py_error::py_error(std::string code, std::string path, std::string op, const std::string& cause)
    : std::runtime_error(compose(path, op, cause)), code_(std::move(code)), path_(std::move(path)),
      op_(std::move(op)) {}

void register_errors(nb::module_&) {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const pheap::error& e) {
      raise(key_of(e.code()), e.what(), e.path(), e.op(), e.sys_errno());
    } catch (const py_error& e) {
      raise(e.code().c_str(), e.what(), e.path(), e.op(), 0);
    } catch (const pheap::graph::ingest_usage_error& e) {
      raise("ingest", (std::string("pheap: add_edges: ") + e.what()).c_str(), "", "add_edges", 0);
    } catch (const pheap::graph::input_error& e) {
      raise("invalid_argument", e.what(), e.file(), "read edges", 0);
    }
    // anything else: nanobind's own translators (std::bad_alloc -> MemoryError, ...)
  });
}

}  // namespace pyheap
