/* tests/capi — the C API (pheap/pheap.h) and Metall's C API drop-in (metall/c_api/metall.h),
 * from a program compiled as C99 (-std=c99 -pedantic-errors): no C++ in sight.
 *
 *   capi_test CASE DIR     runs one case in the fresh directory DIR; exit 0 iff it holds.
 * tests/capi/CMakeLists.txt registers each case as the ctest CApi.<CASE> / MetallCApi.<CASE>.
 */
#define _POSIX_C_SOURCE 200809L
#include <pheap/pheap.h>
#include <metall/c_api/metall.h>

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int failures = 0;
static char dir[4096];

#define CHECK(cond)                                                                  \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      fprintf(stderr, "%s:%d: CHECK(%s) failed; pheap_errmsg: \"%s\"\n", __FILE__,   \
              __LINE__, #cond, pheap_errmsg());                                      \
      ++failures;                                                                    \
    }                                                                                \
  } while (0)

static const char* path_of(const char* name) {
  static char buf[8][4200];
  static int next = 0;
  char* b = buf[next++ % 8];
  snprintf(b, sizeof buf[0], "%s/%s", dir, name);
  return b;
}

static int contains(const char* haystack, const char* needle) { return strstr(haystack, needle) != NULL; }

/* Small heaps and buffers: the cases run beside the rest of the suite. */
static pheap_options small_options(void) {
  pheap_options o;
  memset(&o, 0, sizeof o);
  o.capacity = (uint64_t)256 << 20;
  o.page_size = 4096;
  o.buffer_size = (uint64_t)16 << 20;
  return o;
}

/* ---- pheap.h ---------------------------------------------------------------------------- */

static void CreateWriteFlushAndReopenReadsTheBytesBack(void) {
  const char* ds = path_of("a");
  pheap_options o = small_options();
  pheap_manager* m = pheap_create(ds, &o);
  double* v;
  double* r;
  size_t bytes = 0;
  int64_t e1, e2;
  int i;
  CHECK(m != NULL);
  if (m == NULL) return;
  CHECK(pheap_errcode() == PHEAP_OK && strcmp(pheap_errmsg(), "") == 0);
  v = pheap_named_malloc(m, "values", 1000 * sizeof(double));
  CHECK(v != NULL);
  for (i = 0; i < 1000; ++i) CHECK(v[i] == 0.0); /* zero-filled */
  for (i = 0; i < 1000; ++i) v[i] = i * 0.5;
  e1 = pheap_flush(m);
  CHECK(e1 > 0);
  CHECK(pheap_epoch(m) == e1);
  v[0] = 42.0;
  e2 = pheap_flush(m);
  CHECK(e2 == e1 + 1);
  CHECK(strcmp(pheap_path(m), ds) == 0);
  CHECK(pheap_read_only(m) == 0);
  CHECK(pheap_close(m) == 0);

  m = pheap_open_read_only(ds, NULL);
  CHECK(m != NULL);
  if (m == NULL) return;
  CHECK(pheap_read_only(m) == 1);
  r = pheap_find(m, "values", &bytes);
  CHECK(r != NULL);
  CHECK(bytes == 1000 * sizeof(double));
  if (r != NULL) {
    CHECK(r[0] == 42.0);
    for (i = 1; i < 1000; ++i) CHECK(r[i] == i * 0.5);
  }
  CHECK(pheap_epoch(m) >= e2); /* the close flushed once more */
  CHECK(pheap_sound(m) == 1);
  CHECK(pheap_consistent(ds) == 1);
  CHECK(pheap_close(m) == 0);
}

static void *other_thread_error(void* arg) {
  (void)arg;
  return (void*)(intptr_t)pheap_errcode(); /* a fresh thread has no error */
}

static void AnErrorNamesTheDatastoreAndNeverThrows(void) {
  const char* missing = path_of("missing");
  const char* foreign = path_of("foreign");
  pthread_t t;
  void* seen = NULL;
  FILE* f;
  pheap_manager* m = pheap_open(missing, NULL);
  CHECK(m == NULL);
  CHECK(pheap_errcode() == PHEAP_ENOTFOUND);
  CHECK(contains(pheap_errmsg(), "pheap: open"));
  CHECK(contains(pheap_errmsg(), missing));
  CHECK(strcmp(pheap_errc_name(pheap_errcode()), "not found") == 0);
  /* the error is this thread's */
  CHECK(pthread_create(&t, NULL, other_thread_error, NULL) == 0);
  CHECK(pthread_join(t, &seen) == 0);
  CHECK((intptr_t)seen == PHEAP_OK);
  CHECK(pheap_errcode() == PHEAP_ENOTFOUND);

  /* a directory of someone else's files */
  CHECK(mkdir(foreign, 0700) == 0);
  f = fopen(path_of("foreign/notes.txt"), "w");
  CHECK(f != NULL);
  if (f != NULL) {
    fputs("not a datastore\n", f);
    fclose(f);
  }
  m = pheap_open_read_only(foreign, NULL);
  CHECK(m == NULL);
  CHECK(pheap_errcode() == PHEAP_ENOTDATASTORE);
  CHECK(contains(pheap_errmsg(), foreign));
  CHECK(pheap_remove(foreign) == -1); /* refused: it is not ours to delete */
  CHECK(pheap_errcode() == PHEAP_ENOTDATASTORE);

  /* NULL everywhere is an error, not a crash */
  CHECK(pheap_create(NULL, NULL) == NULL && pheap_errcode() == PHEAP_EINVAL);
  CHECK(pheap_flush(NULL) == -1 && pheap_errcode() == PHEAP_EINVAL);
  CHECK(pheap_malloc(NULL, 8) == NULL && pheap_errcode() == PHEAP_EINVAL);
  CHECK(pheap_find(NULL, "x", NULL) == NULL && pheap_errcode() == PHEAP_EINVAL);
  CHECK(pheap_objects_begin(NULL) == NULL && pheap_errcode() == PHEAP_EINVAL);
  CHECK(pheap_path(NULL) == NULL && pheap_errcode() == PHEAP_EINVAL);
  CHECK(pheap_close(NULL) == 0 && pheap_errcode() == PHEAP_OK);
}

static void ASecondWriterIsRefusedWithLockedAndAReaderOpensBesideTheWriter(void) {
  const char* ds = path_of("l");
  pheap_options o = small_options();
  pheap_manager* w = pheap_create(ds, &o);
  pheap_manager* w2;
  pheap_manager* r;
  CHECK(w != NULL);
  w2 = pheap_open(ds, NULL);
  CHECK(w2 == NULL && pheap_errcode() == PHEAP_ELOCKED);
  CHECK(contains(pheap_errmsg(), ds));
  r = pheap_open_read_only(ds, NULL); /* beside the writer, at its last watermark */
  CHECK(r != NULL);
  CHECK(pheap_remove(ds) == -1 && pheap_errcode() == PHEAP_ELOCKED);
  CHECK(pheap_close(r) == 0);
  CHECK(pheap_close(w) == 0);
  CHECK(pheap_remove(ds) == 0);
  CHECK(pheap_consistent(ds) == 0);
}

static void AReaderRefreshesToTheWritersNewWatermarkWithoutClosing(void) {
  const char* ds = path_of("rf");
  pheap_options o = small_options();
  pheap_manager* w = pheap_create(ds, &o);
  pheap_manager* r;
  uint64_t* x;
  const uint64_t* seen;
  int64_t e;
  CHECK(w != NULL);
  if (w == NULL) return;
  x = pheap_named_malloc(w, "x", sizeof *x);
  CHECK(x != NULL);
  if (x == NULL) return;
  *x = 1;
  CHECK(pheap_flush(w) > 0);
  r = pheap_open_read_only(ds, NULL);
  CHECK(r != NULL);
  if (r == NULL) return;
  *x = 2;
  e = pheap_flush(w);
  CHECK(e > pheap_epoch(r));
  seen = pheap_find(r, "x", NULL);
  CHECK(seen != NULL && *seen == 1); /* its watermark until it refreshes */
  CHECK(pheap_refresh(r) == e);
  CHECK(pheap_epoch(r) == e);
  seen = pheap_find(r, "x", NULL); /* found again after the refresh */
  CHECK(seen != NULL && *seen == 2);
  CHECK(pheap_refresh(r) == e); /* nothing new */
  CHECK(pheap_refresh(w) == -1 && pheap_errcode() == PHEAP_EINVAL);
  CHECK(contains(pheap_errmsg(), ds));
  CHECK(pheap_refresh(NULL) == -1 && pheap_errcode() == PHEAP_EINVAL);
  CHECK(pheap_close(r) == 0);
  CHECK(pheap_close(w) == 0);
}

static void AReadOnlyManagerRefusesEveryMutationWithReadOnly(void) {
  const char* ds = path_of("ro");
  pheap_options o = small_options();
  pheap_manager* m = pheap_create(ds, &o);
  CHECK(m != NULL && pheap_named_malloc(m, "x", 16) != NULL);
  CHECK(pheap_close(m) == 0);
  m = pheap_open_read_only(ds, NULL);
  CHECK(m != NULL);
  CHECK(pheap_malloc(m, 16) == NULL && pheap_errcode() == PHEAP_EREADONLY);
  CHECK(pheap_named_malloc(m, "y", 16) == NULL && pheap_errcode() == PHEAP_EREADONLY);
  CHECK(pheap_named_free(m, "x") == -1 && pheap_errcode() == PHEAP_EREADONLY);
  CHECK(pheap_flush(m) == -1 && pheap_errcode() == PHEAP_EREADONLY);
  CHECK(contains(pheap_errmsg(), ds));
  CHECK(pheap_find(m, "x", NULL) != NULL); /* reading is fine */
  CHECK(pheap_close(m) == 0);
}

struct node {
  uint64_t value;
  uint64_t next; /* offset of the next node, PHEAP_NO_OFFSET at the end */
};

static void OffsetsStoredInTheHeapLeadToTheSameDataAfterAReopen(void) {
  const char* ds = path_of("off");
  pheap_options o = small_options();
  pheap_manager* m = pheap_create(ds, &o);
  uint64_t* head;
  struct node* n;
  int i, count = 0;
  uint64_t sum = 0, at;
  int local = 0;
  CHECK(m != NULL);
  if (m == NULL) return;
  head = pheap_named_malloc(m, "head", sizeof(uint64_t));
  *head = PHEAP_NO_OFFSET;
  for (i = 1; i <= 100; ++i) { /* a linked list of offsets, built front first */
    n = pheap_malloc(m, sizeof *n);
    CHECK(n != NULL);
    if (n == NULL) return;
    n->value = (uint64_t)i;
    n->next = *head;
    *head = pheap_to_offset(m, n);
    CHECK(*head != PHEAP_NO_OFFSET);
    CHECK(pheap_from_offset(m, *head) == (void*)n);
  }
  CHECK(pheap_to_offset(m, &local) == PHEAP_NO_OFFSET && pheap_errcode() == PHEAP_EINVAL);
  CHECK(pheap_from_offset(m, pheap_capacity(m)) == NULL && pheap_errcode() == PHEAP_EINVAL);
  CHECK(pheap_close(m) == 0);

  m = pheap_open(ds, NULL);
  CHECK(m != NULL);
  if (m == NULL) return;
  head = pheap_find(m, "head", NULL);
  CHECK(head != NULL);
  for (at = head ? *head : PHEAP_NO_OFFSET; at != PHEAP_NO_OFFSET; at = n->next) {
    n = pheap_from_offset(m, at);
    CHECK(n != NULL);
    if (n == NULL) break;
    sum += n->value;
    ++count;
  }
  CHECK(count == 100);
  CHECK(sum == 5050);
  CHECK(pheap_close(m) == 0);
}

static void IterationListsEveryNamedObjectWithItsTypeAndSize(void) {
  const char* ds = path_of("it");
  pheap_options o = small_options();
  pheap_manager* m = pheap_create(ds, &o);
  pheap_objects* it;
  pheap_object obj;
  int seen_a = 0, seen_b = 0, seen_c = 0, n = 0, rc;
  CHECK(m != NULL);
  if (m == NULL) return;
  CHECK(pheap_named_malloc(m, "alpha", 10) != NULL);
  CHECK(pheap_named_malloc(m, "beta", 2000) != NULL);
  CHECK(pheap_named_malloc(m, "gamma", 1) != NULL);
  CHECK(pheap_named_malloc(m, "beta", 5) == NULL && pheap_errcode() == PHEAP_EEXIST);
  CHECK(contains(pheap_errmsg(), "beta"));
  it = pheap_objects_begin(m);
  CHECK(it != NULL);
  while ((rc = pheap_objects_next(it, &obj)) == 1) {
    ++n;
    CHECK(strcmp(obj.type_name, "unsigned char") == 0);
    CHECK(obj.type_size == 1 && obj.size == obj.length);
    CHECK(pheap_from_offset(m, obj.offset) == obj.address);
    if (strcmp(obj.name, "alpha") == 0) seen_a = obj.size == 10;
    if (strcmp(obj.name, "beta") == 0) seen_b = obj.size == 2000;
    if (strcmp(obj.name, "gamma") == 0) seen_c = obj.size == 1;
    if (n == 1) CHECK(pheap_named_free(m, "gamma") == 0); /* the listing is a copy */
  }
  CHECK(rc == 0);
  CHECK(n == 3 && seen_a && seen_b && seen_c);
  pheap_objects_end(it);
  CHECK(pheap_find(m, "gamma", NULL) == NULL && pheap_errcode() == PHEAP_ENOTFOUND);
  CHECK(pheap_named_free(m, "gamma") == -1 && pheap_errcode() == PHEAP_ENOTFOUND);
  CHECK(pheap_named_malloc(m, "", 4) == NULL && pheap_errcode() == PHEAP_EINVAL);
  CHECK(pheap_close(m) == 0);
}

static void AFullHeapIsENOMEMNamingTheDatastore(void) {
  const char* ds = path_of("full");
  pheap_options o = small_options();
  pheap_manager* m;
  void* p;
  o.capacity = (uint64_t)32 << 20;
  m = pheap_create(ds, &o);
  CHECK(m != NULL);
  if (m == NULL) return;
  p = pheap_malloc(m, (size_t)64 << 20);
  CHECK(p == NULL && pheap_errcode() == PHEAP_ENOMEM);
  CHECK(contains(pheap_errmsg(), ds) && contains(pheap_errmsg(), "full"));
  CHECK(pheap_named_malloc(m, "big", (size_t)64 << 20) == NULL && pheap_errcode() == PHEAP_ENOMEM);
  CHECK(pheap_aligned_malloc(m, 64, 3) == NULL && pheap_errcode() == PHEAP_EINVAL);
  p = pheap_aligned_malloc(m, 100, 4096);
  CHECK(p != NULL && ((uintptr_t)p % 4096) == 0);
  CHECK(pheap_free(m, p) == 0);
  CHECK(pheap_free(m, &o) == -1 && pheap_errcode() == PHEAP_EINVAL); /* not the heap's */
  CHECK(pheap_close(m) == 0);
}

static void ASnapshotIsAnIndependentDatastoreAtItsWatermark(void) {
  const char* ds = path_of("s");
  const char* snap = path_of("s-copy");
  pheap_options o = small_options();
  pheap_manager* m = pheap_create(ds, &o);
  pheap_manager* s;
  char* text;
  int64_t e;
  CHECK(m != NULL);
  if (m == NULL) return;
  text = pheap_named_malloc(m, "text", 32);
  strcpy(text, "before");
  e = pheap_snapshot(m, snap);
  CHECK(e > 0);
  strcpy(text, "after");
  CHECK(pheap_snapshot(m, snap) == -1 && pheap_errcode() == PHEAP_EEXIST);
  CHECK(pheap_close(m) == 0);
  s = pheap_open_read_only(snap, NULL);
  CHECK(s != NULL);
  if (s == NULL) return;
  text = pheap_find(s, "text", NULL);
  CHECK(text != NULL && strcmp(text, "before") == 0);
  CHECK(pheap_close(s) == 0);
}

/* A damaged page read inside pheap_guard_faults: flip a bit in a segment file's block that
 * holds only our pattern byte, then read it back. */
struct scan {
  const unsigned char* p;
  size_t n;
  unsigned sum;
};
static void read_all(void* ctx) {
  struct scan* s = ctx;
  size_t i;
  for (i = 0; i < s->n; ++i) s->sum += s->p[i];
}

static int damage_block_of(const char* ds, unsigned char fill) {
  DIR* d = opendir(ds);
  struct dirent* e;
  static unsigned char block[4096];
  char file[4400];
  int done = 0;
  if (d == NULL) return 0;
  while (!done && (e = readdir(d)) != NULL) {
    FILE* f;
    long off = 0;
    if (strncmp(e->d_name, "segment-", 8) != 0) continue;
    snprintf(file, sizeof file, "%s/%s", ds, e->d_name);
    f = fopen(file, "r+b");
    if (f == NULL) continue;
    while (!done && fread(block, 1, sizeof block, f) == sizeof block) {
      size_t i;
      for (i = 0; i < sizeof block && block[i] == fill; ++i) {
      }
      if (i == sizeof block) {
        block[1000] ^= 1;
        fseek(f, off + 1000, SEEK_SET);
        fputc(block[1000], f);
        done = 1;
      }
      off += (long)sizeof block;
    }
    fclose(f);
  }
  closedir(d);
  return done;
}

static void ADamagedPageReadInsideTheGuardIsCorruptNamingTheFile(void) {
  const char* ds = path_of("dmg");
  pheap_options o = small_options();
  pheap_manager* m = pheap_create(ds, &o);
  unsigned char* blob;
  struct scan s;
  size_t n = 0;
  CHECK(m != NULL);
  if (m == NULL) return;
  blob = pheap_named_malloc(m, "blob", 64 * 1024);
  memset(blob, 0x5a, 64 * 1024);
  CHECK(pheap_flush(m) > 0);
  CHECK(pheap_flush(m) > 0); /* the pages are in the segment files */
  CHECK(pheap_close(m) == 0);
  CHECK(damage_block_of(ds, 0x5a));
  m = pheap_open_read_only(ds, NULL);
  CHECK(m != NULL);
  if (m == NULL) return;
  s.p = pheap_find(m, "blob", &n);
  s.n = n;
  s.sum = 0;
  CHECK(s.p != NULL && n == 64 * 1024);
  CHECK(pheap_guard_faults(read_all, &s) == -1);
  CHECK(pheap_errcode() == PHEAP_ECORRUPT);
  CHECK(contains(pheap_errmsg(), "segment-"));
  CHECK(contains(pheap_errmsg(), "page"));
  CHECK(pheap_sound(m) == 0);
  CHECK(pheap_guard_faults(NULL, NULL) == -1 && pheap_errcode() == PHEAP_EINVAL);
  CHECK(pheap_close(m) == 0);
}

/* ---- metall/c_api/metall.h ------------------------------------------------------------- */

static void MetallProgramsRunUnchanged(void) {
  const char* ds = path_of("metall");
  metall_manager* m = metall_create(ds);
  uint64_t* x;
  uint64_t* a;
  CHECK(m != NULL);
  if (m == NULL) return;
  x = metall_malloc(m, sizeof(uint64_t));
  CHECK(x != NULL);
  *x = 1;
  metall_free(m, x);
  a = metall_named_malloc(m, "array", sizeof(uint64_t) * 10);
  CHECK(a != NULL);
  a[0] = 0;
  a[1] = 1;
  metall_flush(m);
  CHECK(metall_snapshot(m, path_of("metall-snap")));
  metall_close(m);

  m = metall_open(ds);
  CHECK(m != NULL);
  if (m == NULL) return;
  a = metall_find(m, "array");
  CHECK(a != NULL && a[0] == 0 && a[1] == 1);
  CHECK(metall_named_free(m, "array"));
  CHECK(metall_find(m, "array") == NULL);
  metall_close(m);
  m = metall_open_read_only(path_of("metall-snap"));
  CHECK(m != NULL);
  if (m != NULL) {
    a = metall_find(m, "array");
    CHECK(a != NULL && a[1] == 1);
    metall_close(m);
  }
  CHECK(metall_remove(ds));
  CHECK(metall_remove(path_of("metall-snap")));
}

static void MetallErrorsSetMetallsErrno(void) {
  const char* ds = path_of("me");
  metall_manager* m;
  metall_manager* other;
  errno = 0;
  CHECK(metall_open(path_of("me-missing")) == NULL && errno == ENOTRECOVERABLE);
  m = metall_create(ds);
  CHECK(m != NULL);
  if (m == NULL) return;
  errno = 0;
  CHECK(metall_create(ds) == NULL && errno == EEXIST);
  errno = 0;
  other = metall_open(ds); /* held by m */
  CHECK(other == NULL && errno == ENOTRECOVERABLE);
  errno = 0;
  CHECK(!metall_remove(ds) && errno == EADDRINUSE);
  errno = 0;
  CHECK(metall_find(m, "nothing") == NULL && errno == ENOENT);
  errno = 0;
  CHECK(!metall_named_free(m, "nothing") && errno == ENOENT);
  CHECK(metall_named_malloc(m, "n", 8) != NULL);
  errno = 0;
  CHECK(metall_named_malloc(m, "n", 8) == NULL && errno == ENOMEM); /* the name is taken */
  errno = 0;
  CHECK(metall_malloc(NULL, 8) == NULL && errno == EINVAL);
  metall_close(m);
  errno = 0;
  CHECK(!metall_remove(path_of("me-missing")) && errno == ENOENT);
}

static void MetallNamedMemoryIsPheapNamedMemory(void) {
  const char* ds = path_of("both");
  pheap_options o = small_options();
  pheap_manager* p = pheap_create(ds, &o);
  metall_manager* m;
  char* s;
  CHECK(p != NULL);
  if (p == NULL) return;
  s = pheap_named_malloc(p, "greeting", 16);
  strcpy(s, "hello");
  CHECK(pheap_close(p) == 0);
  m = metall_open(ds);
  CHECK(m != NULL);
  if (m == NULL) return;
  s = metall_find(m, "greeting");
  CHECK(s != NULL && strcmp(s, "hello") == 0);
  s = metall_named_malloc(m, "reply", 16);
  strcpy(s, "world");
  metall_close(m);
  p = pheap_open_read_only(ds, NULL);
  CHECK(p != NULL);
  if (p == NULL) return;
  s = pheap_find(p, "reply", NULL);
  CHECK(s != NULL && strcmp(s, "world") == 0);
  CHECK(pheap_close(p) == 0);
}

struct test_case {
  const char* name;
  void (*run)(void);
};

static const struct test_case cases[] = {
    {"CreateWriteFlushAndReopenReadsTheBytesBack", CreateWriteFlushAndReopenReadsTheBytesBack},
    {"AnErrorNamesTheDatastoreAndNeverThrows", AnErrorNamesTheDatastoreAndNeverThrows},
    {"ASecondWriterIsRefusedWithLockedAndAReaderOpensBesideTheWriter",
     ASecondWriterIsRefusedWithLockedAndAReaderOpensBesideTheWriter},
    {"AReaderRefreshesToTheWritersNewWatermarkWithoutClosing", AReaderRefreshesToTheWritersNewWatermarkWithoutClosing},
    {"AReadOnlyManagerRefusesEveryMutationWithReadOnly", AReadOnlyManagerRefusesEveryMutationWithReadOnly},
    {"OffsetsStoredInTheHeapLeadToTheSameDataAfterAReopen", OffsetsStoredInTheHeapLeadToTheSameDataAfterAReopen},
    {"IterationListsEveryNamedObjectWithItsTypeAndSize", IterationListsEveryNamedObjectWithItsTypeAndSize},
    {"AFullHeapIsENOMEMNamingTheDatastore", AFullHeapIsENOMEMNamingTheDatastore},
    {"ASnapshotIsAnIndependentDatastoreAtItsWatermark", ASnapshotIsAnIndependentDatastoreAtItsWatermark},
    {"ADamagedPageReadInsideTheGuardIsCorruptNamingTheFile", ADamagedPageReadInsideTheGuardIsCorruptNamingTheFile},
    {"MetallProgramsRunUnchanged", MetallProgramsRunUnchanged},
    {"MetallErrorsSetMetallsErrno", MetallErrorsSetMetallsErrno},
    {"MetallNamedMemoryIsPheapNamedMemory", MetallNamedMemoryIsPheapNamedMemory},
};

int main(int argc, char** argv) {
  size_t i;
  if (argc == 2 && strcmp(argv[1], "--list") == 0) {
    for (i = 0; i < sizeof cases / sizeof cases[0]; ++i) printf("%s\n", cases[i].name);
    return 0;
  }
  if (argc != 3) {
    fprintf(stderr, "usage: capi_test CASE DIR | --list\n");
    return 2;
  }
  snprintf(dir, sizeof dir, "%s", argv[2]);
  for (i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    if (strcmp(cases[i].name, argv[1]) != 0) continue;
    cases[i].run();
    if (failures == 0) printf("%s: passed\n", cases[i].name);
    return failures == 0 ? 0 : 1;
  }
  fprintf(stderr, "capi_test: no case %s\n", argv[1]);
  return 2;
}
