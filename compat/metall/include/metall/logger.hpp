// metall/logger.hpp (pheap's Metall compatibility layer) — Metall's logger hooks.
//
// The layer's noexcept calls report a failure by their result (false, nullptr, an empty
// string) and log the pheap::error message that explains it (which names the datastore and
// the cause) at level error. Messages reach metall_log() (metall/logger_interface.h): by
// default it prints "<file> at line <n> --- <message>" to stderr when the level passes
// logger::set_log_level (default: error and critical), and aborts after a critical message if
// abort_on_critical_error(true) (the default). Define METALL_LOGGER_EXTERN_C to provide
// metall_log() yourself; set_log_level and abort_on_critical_error are then yours too.
#pragma once

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>

#include <metall/logger_interface.h>

namespace metall {

class logger {
 public:
  enum struct level {
    verbose = metall_verbose,
    debug = metall_debug,
    info = metall_info,
    warning = metall_warning,
    error = metall_error,
    critical = metall_critical,
  };

  static void out(level lvl, const char* file_name, int line_no, const char* message) noexcept {
    metall_log(static_cast<metall_log_level>(lvl), file_name, static_cast<size_t>(line_no), message);
  }
  // `message`: strerror(errno), as Metall's.
  static void perror(level lvl, const char* file_name, int line_no, const char* message) noexcept {
    try {
      const std::string m = std::string(message) + ": " + std::strerror(errno);
      out(lvl, file_name, line_no, m.c_str());
    } catch (...) {
    }
  }

  logger() = delete;

#ifndef METALL_LOGGER_EXTERN_C
  // The least severe level printed; silent prints nothing.
  class level_filter {
   public:
    static const level_filter critical, error, warning, info, debug, verbose, silent;
    bool should_log(level lvl) const noexcept { return min_.has_value() && lvl >= *min_; }

   private:
    explicit constexpr level_filter(std::optional<level> min) noexcept : min_(min) {}
    std::optional<level> min_;
  };

  static level_filter log_level() noexcept { return filter_; }
  static void set_log_level(level_filter f) noexcept { filter_ = f; }
  static bool abort_on_critical_error() noexcept { return abort_on_critical_; }
  static void abort_on_critical_error(bool enable) noexcept { abort_on_critical_ = enable; }

 private:
  static level_filter filter_;
  static bool abort_on_critical_;
#endif
};

#ifndef METALL_LOGGER_EXTERN_C
inline const logger::level_filter logger::level_filter::critical{logger::level::critical};
inline const logger::level_filter logger::level_filter::error{logger::level::error};
inline const logger::level_filter logger::level_filter::warning{logger::level::warning};
inline const logger::level_filter logger::level_filter::info{logger::level::info};
inline const logger::level_filter logger::level_filter::debug{logger::level::debug};
inline const logger::level_filter logger::level_filter::verbose{logger::level::verbose};
inline const logger::level_filter logger::level_filter::silent{std::nullopt};
inline logger::level_filter logger::filter_ = logger::level_filter::error;
inline bool logger::abort_on_critical_ = true;
#endif

}  // namespace metall

#ifndef METALL_LOGGER_EXTERN_C
extern "C" inline void metall_log(metall_log_level lvl, const char* file_name, size_t line_no,
                                  const char* message) {
  const auto level = static_cast<metall::logger::level>(lvl);
  if (metall::logger::log_level().should_log(level)) {
    try {
      std::cerr << file_name << " at line " << line_no << " --- " << message << std::endl;
    } catch (...) {
    }
  }
  if (level == metall::logger::level::critical && metall::logger::abort_on_critical_error()) std::abort();
}
#endif
