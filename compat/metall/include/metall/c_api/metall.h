/* metall/c_api/metall.h (pheap's Metall compatibility layer) — Metall's C API over a pheap
 * datastore: a C program written against Metall's C API compiles and runs against pheap by
 * linking pheap::metall_c instead of Metall's metall_c (same header name, same functions).
 *
 * Metall's behaviour, kept: failures answer NULL / false and set errno —
 *   metall_open, metall_open_read_only   ENOTRECOVERABLE when the datastore cannot be opened
 *                                        (missing, foreign, damaged, held by a writer);
 *                                        the cause is logged (metall/logger.hpp), naming it
 *   metall_create                        EEXIST when `path` exists (never overwritten);
 *                                        ENOTRECOVERABLE when creation failed otherwise
 *   metall_malloc, metall_named_malloc   ENOMEM when nothing was allocated (the heap is full,
 *                                        the name is taken, the manager is read-only)
 *   metall_find                          ENOENT when there is no such object
 *   metall_named_free                    ENOENT when there is no such object
 *   metall_remove                        EADDRINUSE when another opener holds the datastore,
 *                                        ENOENT when there is none
 *   metall_snapshot                      false when the snapshot failed (logged)
 * Named memory is a named array of `unsigned char` (Metall's type), so metall_find also finds
 * what pheap_named_malloc (pheap/pheap.h) made, and the other way round.
 *
 * Where pheap is stronger it stays so: metall_flush() is a crash-safe watermark (after
 * kill -9 the datastore opens at the last flush; Metall's would be inconsistent), and a
 * datastore that was not closed is not refused. Also different: the capacity is pheap's
 * default (64 GiB of address space); a NULL manager is answered with errno EINVAL instead of
 * undefined behaviour; for pheap's own richer C API (error codes and messages per thread,
 * options, iteration, offsets) use <pheap/pheap.h>.
 */
#ifndef METALL_C_API_METALL_H
#define METALL_C_API_METALL_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct metall_manager metall_manager;

metall_manager* metall_open(const char* path);
metall_manager* metall_open_read_only(const char* path);
metall_manager* metall_create(const char* path);
bool metall_snapshot(metall_manager* manager, const char* dst_path);
void metall_flush(metall_manager* manager);
void metall_close(metall_manager* manager);
bool metall_remove(const char* path);
void* metall_malloc(metall_manager* manager, size_t size);
void metall_free(metall_manager* manager, void* ptr);
void* metall_named_malloc(metall_manager* manager, const char* name, size_t size);
void* metall_find(metall_manager* manager, const char* name);
bool metall_named_free(metall_manager* manager, const char* name);

#ifdef __cplusplus
}
#endif

#endif /* METALL_C_API_METALL_H */
