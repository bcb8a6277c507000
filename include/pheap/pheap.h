/* pheap/pheap.h — the C API: a pheap datastore from C (C99) or any language with a C FFI.
 *
 *   pheap_manager* m = pheap_create("/data/a", NULL);          (or pheap_open / _read_only)
 *   if (m == NULL) { fprintf(stderr, "%s\n", pheap_errmsg()); return 1; }
 *   double* v = pheap_named_malloc(m, "values", 1000 * sizeof(double));
 *   v[0] = 1.5;
 *   int64_t epoch = pheap_flush(m);                            (durable, atomically)
 *   pheap_close(m);
 *   ... later, another process, another address:
 *   m = pheap_open_read_only("/data/a", NULL);
 *   size_t bytes;
 *   const double* r = pheap_find(m, "values", &bytes);
 *
 * The same datastores as the C++ API (pheap/manager.hpp): a C++ program opens what a C program
 * made and the other way round. Durability is the C++ one: everything written before
 * pheap_flush() becomes durable atomically; after a crash the datastore opens at the last
 * completed flush; pheap_close() flushes.
 *
 * Errors. Every function reports failure by its result (NULL, -1, or the value its comment
 * names) and sets this thread's error: pheap_errcode() (a pheap_errc) and pheap_errmsg() (the
 * message the C++ pheap::error carries: "pheap: OPERATION DATASTORE: CAUSE", e.g. "pheap: open
 * /data/a: not a pheap datastore: ..."). A successful call sets PHEAP_OK and "". No function
 * throws a C++ exception across the boundary or calls abort(); a NULL manager, path or name
 * is PHEAP_EINVAL, never a crash.
 *
 * Objects. pheap_named_malloc(m, name, n) makes a named array of n bytes (C++ type
 * `unsigned char`, length n: Metall's named_malloc), zero-filled. pheap_find finds a named
 * object of ANY type — also one a C++ program constructed — and gives its address and size in
 * bytes; pheap_objects_* list them with their recorded C++ type. pheap_named_free frees only
 * byte arrays (a C++ object's destructor cannot run from C: PHEAP_ETYPE).
 *
 * Pointers. Addresses into the heap are valid while the manager is open; the next open may
 * map the heap at another address. Store offsets inside the heap (pheap_to_offset /
 * pheap_from_offset), never raw pointers.
 *
 * Threads. Every function is thread-safe, except that a manager must not be closed while
 * another thread uses it, and an iterator belongs to one thread at a time. The error state is
 * per thread. Processes: one read-write opener per datastore (a second fails with
 * PHEAP_ELOCKED) and any number of read-only openers beside it, each reading the last watermark
 * it opened (sparse_store/FORMAT.md, "Readers beside a writer"; a reader the writer had to
 * release reads PHEAP_ESTALE).
 *
 * Caveats:
 *   * A damaged page (failed checksum, I/O error) read through a plain pointer is SIGBUS, as in
 *     C++. pheap_guard_faults(fn, ctx) runs fn and turns that into PHEAP_ECORRUPT / PHEAP_EIO
 *     naming the segment file and the page, with the caveats of pheap/fault_guard.hpp (fn is
 *     left by siglongjmp: it must own nothing that needs releasing, take no locks, and not
 *     write to or allocate from the heap).
 *   * A store through a pointer into a datastore opened read-only is SIGSEGV (one line naming
 *     the datastore and the address is printed first): the memory is mapped read-only.
 *   * Names are NUL-terminated byte strings compared exactly; the empty name is refused.
 *   * A full heap: pheap_malloc / pheap_named_malloc return NULL with PHEAP_ENOMEM.
 */
#ifndef PHEAP_PHEAP_H
#define PHEAP_PHEAP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pheap_manager pheap_manager;

/* The error codes: one per pheap::errc (pheap/error.hpp), in the same order, plus ENOMEM
 * (the heap or the process is out of memory) and EUNKNOWN (a failure of no known kind). */
typedef enum pheap_errc {
  PHEAP_OK = 0,
  PHEAP_EIO,           /* an OS call failed; the message names it */
  PHEAP_ENOSPC,        /* no space left on the device */
  PHEAP_ENOTFOUND,     /* no such datastore, file or named object */
  PHEAP_EEXIST,        /* create on a path that holds something; a name that is taken */
  PHEAP_ENOTDATASTORE, /* a directory that is not a pheap datastore (foreign) */
  PHEAP_ENEWER,        /* written by a newer pheap format */
  PHEAP_EOLDER,        /* written by an older format this build no longer reads */
  PHEAP_ECORRUPT,      /* damaged data: a checksum mismatch, torn or impossible metadata */
  PHEAP_ELOCKED,       /* another opener holds the datastore */
  PHEAP_EREADONLY,     /* a mutation through a read-only manager */
  PHEAP_EINVAL,        /* a bad argument: NULL, a foreign pointer, an empty name, ... */
  PHEAP_ETYPE,         /* an object of another type than the call handles */
  PHEAP_EUNAVAILABLE,  /* a kernel facility (userfaultfd) is missing or refused */
  PHEAP_EPOISONED,     /* an earlier fatal error ended this manager's epoch: reopen */
  PHEAP_ESTALE,        /* the writer released the watermark a reader read: reopen */
  PHEAP_ENOMEM,        /* the heap (or the process) has no memory left */
  PHEAP_EUNKNOWN
} pheap_errc;

/* This thread's error from its last pheap_* call (PHEAP_OK after a success). */
int pheap_errcode(void);
/* Its message ("" after a success); valid until this thread's next pheap_* call. */
const char* pheap_errmsg(void);
/* "corrupt", "locked", ... for a code (pheap::to_string(errc)); never NULL. */
const char* pheap_errc_name(int code);

/* Options of create and open. Zero (or NULL) fields take the library's defaults, which honour
 * the PHEAP_* environment variables (README "Tuning"). Open ignores the creation fields: the
 * datastore's recorded ones win. */
typedef struct pheap_options {
  uint64_t capacity;       /* creation: heap bytes (address space, not memory); default 64 GiB */
  uint32_t page_size;      /* creation: power of two, 4 KiB .. 64 MiB; default 64 KiB */
  uint64_t buffer_size;    /* every open: DRAM for the heap's pages; default automatic */
  const char* description; /* creation: the datastore's description (<= 1800 bytes) */
} pheap_options;

/* NULL on error. create: `path` must not exist (or be an empty directory). */
pheap_manager* pheap_create(const char* path, const pheap_options* opt);
pheap_manager* pheap_open(const char* path, const pheap_options* opt);
pheap_manager* pheap_open_read_only(const char* path, const pheap_options* opt);
/* Flushes (read-write managers) and closes; NULL is ignored. 0, or -1 when the final flush
 * failed (the datastore then stays at its previous watermark). The manager is gone either way. */
int pheap_close(pheap_manager* m);

/* The new watermark (epoch), or -1. Read-only managers: PHEAP_EREADONLY. */
int64_t pheap_flush(pheap_manager* m);
/* Read-only managers: moves to the datastore's newest watermark without closing (a writer may
 * hold it meanwhile) and returns the epoch read now, or -1 (a read-write manager: PHEAP_EINVAL;
 * a datastore read under its shared flock — format 3, no write access to its reader table —:
 * PHEAP_EINVAL, reopen instead). Pages whose copy did not change stay in memory. Every address
 * into the heap stays an address in it but reads the new watermark's bytes: find named objects
 * again (pheap_find) after a refresh. No other thread may use the manager or read the heap
 * during the call. A reader the writer released (PHEAP_ESTALE) reads again after it. When the
 * new watermark's heap cannot be attached (grown past what an RLIMIT_AS let this manager map:
 * PHEAP_EUNAVAILABLE) every later call fails the same way: close and reopen (pheap/manager.hpp,
 * manager::refresh). */
int64_t pheap_refresh(pheap_manager* m);
/* Flushes, then writes an independent datastore at `dst` (must not exist) holding that
 * watermark; its epoch, or -1. Writers may keep running meanwhile. */
int64_t pheap_snapshot(pheap_manager* m, const char* dst);
/* Deletes the datastore at `path`: 0, or -1 (not a datastore, in use: PHEAP_ELOCKED, ...). */
int pheap_remove(const char* path);
/* 1 if `path` is a datastore this library opens, else 0. Never fails (the error is PHEAP_OK). */
int pheap_consistent(const char* path);

/* Raw memory: NULL when the heap is full (PHEAP_ENOMEM) or read-only. size 0 is PHEAP_EINVAL. */
void* pheap_malloc(pheap_manager* m, size_t size);
/* align: a power of two <= 4096, else NULL with PHEAP_EINVAL. */
void* pheap_aligned_malloc(pheap_manager* m, size_t size, size_t align);
/* 0, or -1 (a pointer this heap did not allocate: PHEAP_EINVAL). NULL is ignored (0). */
int pheap_free(pheap_manager* m, void* p);

/* A zero-filled named byte array; NULL if the name is taken (PHEAP_EEXIST), the heap is full
 * (PHEAP_ENOMEM), size is 0 or the name empty (PHEAP_EINVAL). */
void* pheap_named_malloc(pheap_manager* m, const char* name, size_t size);
/* The named object's address and (if `size` is not NULL) its size in bytes; NULL with
 * PHEAP_ENOTFOUND when there is none. */
void* pheap_find(pheap_manager* m, const char* name, size_t* size);
/* Frees a named byte array: 0, or -1 (PHEAP_ENOTFOUND; PHEAP_ETYPE for another type). */
int pheap_named_free(pheap_manager* m, const char* name);

/* ---- iteration over named objects ---------------------------------------------------------- */
typedef struct pheap_object {
  const char* name;        /* NUL-terminated; owned by the iterator, valid until its next step */
  const char* type_name;   /* the recorded C++ type, e.g. "unsigned char", "double" */
  size_t length;           /* elements */
  size_t type_size;        /* bytes per element */
  size_t size;             /* length * type_size */
  void* address;           /* of the first element */
  uint64_t offset;         /* from the heap base: stable across reopens */
  const char* description; /* the object's description, "" if none */
} pheap_object;

typedef struct pheap_objects pheap_objects;
/* The named objects as they are now (a copy of the directory: constructing or freeing objects
 * afterwards does not disturb the iteration, but an address is only valid while its object
 * exists). NULL on error. */
pheap_objects* pheap_objects_begin(pheap_manager* m);
/* 1 and *out filled, 0 at the end, -1 on error. */
int pheap_objects_next(pheap_objects* it, pheap_object* out);
void pheap_objects_end(pheap_objects* it); /* NULL is ignored */

/* ---- addresses -------------------------------------------------------------------------------- */
/* PHEAP_NO_OFFSET: pheap_to_offset's answer for an address outside the heap (PHEAP_EINVAL). */
#define PHEAP_NO_OFFSET UINT64_MAX
uint64_t pheap_to_offset(const pheap_manager* m, const void* p);
/* NULL (PHEAP_EINVAL) for an offset at or beyond the heap's capacity. */
void* pheap_from_offset(const pheap_manager* m, uint64_t offset);

/* ---- about the datastore ---------------------------------------------------------------------- */
/* NULL (PHEAP_EINVAL) only for a NULL manager. The path as given to create/open. */
const char* pheap_path(const pheap_manager* m);
int pheap_read_only(const pheap_manager* m);  /* 1, 0, or -1 */
int64_t pheap_epoch(const pheap_manager* m);  /* the last watermark, or -1 */
uint64_t pheap_capacity(const pheap_manager* m);  /* heap bytes; 0 on error */
/* 1 while the manager met no damaged page, 0 after (pheap::manager::consistent()), -1 on error. */
int pheap_sound(const pheap_manager* m);

/* Runs fn(ctx); 0, or -1 when fn read a damaged page of a datastore of this process
 * (PHEAP_ECORRUPT or PHEAP_EIO naming the file and the page). See the caveats above. */
int pheap_guard_faults(void (*fn)(void* ctx), void* ctx);

#ifdef __cplusplus
}
#endif

#endif /* PHEAP_PHEAP_H */
