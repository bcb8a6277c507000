/* metall/logger_interface.h (pheap's Metall compatibility layer) — the C logging hook.
 *
 * Levels in increasing severity. A program built with METALL_LOGGER_EXTERN_C defined provides
 * metall_log() itself (e.g. to route messages into a host language's logger); otherwise
 * metall/logger.hpp defines it, printing to stderr what passes logger::set_log_level. */
#ifndef METALL_LOGGER_INTERFACE_H
#define METALL_LOGGER_INTERFACE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum metall_log_level {
  metall_verbose = 0,
  metall_debug = 1,
  metall_info = 2,
  metall_warning = 3,
  metall_error = 4,
  metall_critical = 5,
} metall_log_level;

/* One message of the compatibility layer: where it was raised and what happened. */
void metall_log(metall_log_level level, const char* file_name, size_t line_no, const char* message);

#ifdef __cplusplus
}
#endif

#endif /* METALL_LOGGER_INTERFACE_H */
