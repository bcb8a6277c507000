#include "pheap/error.hpp"

#include <cerrno>
#include <cstring>

namespace pheap {

const char* to_string(errc code) noexcept {
  switch (code) {
    case errc::io: return "I/O error";
    case errc::no_space: return "no space left";
    case errc::not_found: return "not found";
    case errc::already_exists: return "already exists";
    case errc::not_a_datastore: return "not a pheap datastore";
    case errc::newer_format: return "newer format";
    case errc::older_format: return "older format";
    case errc::corrupt: return "corrupt";
    case errc::locked: return "locked";
    case errc::read_only: return "read-only";
    case errc::invalid_argument: return "invalid argument";
    case errc::type_mismatch: return "type mismatch";
    case errc::unavailable: return "unavailable";
    case errc::poisoned: return "poisoned";
    case errc::stale: return "stale";
  }
  return "unknown";
}

namespace {
std::string compose(const std::string& path, const std::string& op, const std::string& cause) {
  std::string m = "pheap: ";
  m += op;
  if (!path.empty()) {
    m += ' ';
    m += path;
  }
  m += ": ";
  m += cause;
  return m;
}
}  // namespace

error::error(errc code, std::string path, std::string op, std::string cause, int sys_errno)
    : std::runtime_error(compose(path, op, cause)),
      code_(code),
      path_(std::move(path)),
      op_(std::move(op)),
      errno_(sys_errno) {}

void throw_errno(int err, const std::string& path, const std::string& op) {
  const errc code = (err == ENOSPC || err == EDQUOT) ? errc::no_space
                    : err == ENOENT                  ? errc::not_found
                    : err == EEXIST                  ? errc::already_exists
                                                     : errc::io;
  throw error(code, path, op, std::strerror(err), err);
}

}  // namespace pheap
