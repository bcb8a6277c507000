// python/ext/errors.hpp — how C++ failures reach Python: every pheap::error becomes the
// pheap.Error subclass of its errc (pheap/_errors.py), with the same message; failures of the
// Python layer itself are py_error with a code of that table ("closed", "ingest", ...).
// Messages follow pheap::error's form: "pheap: OPERATION PATH: CAUSE".
#pragma once

#include <nanobind/nanobind.h>

#include <stdexcept>
#include <string>

namespace pyheap {

class py_error : public std::runtime_error {
 public:
  // code: a key of pheap._errors.BY_CODE ("closed", "ingest", "not_found", ...).
  py_error(std::string code, std::string path, std::string op, const std::string& cause);
  const std::string& code() const noexcept { return code_; }
  const std::string& path() const noexcept { return path_; }
  const std::string& op() const noexcept { return op_; }

 private:
  std::string code_, path_, op_;
};

// Installs the translator (module initialisation).
void register_errors(nanobind::module_& m);

}  // namespace pyheap
