/* Writes through the C API, reads back through Metall's C API; prints "installed c <value>". */
#include <metall/c_api/metall.h>
#include <pheap/pheap.h>

#include <stdint.h>
#include <stdio.h>

int main(int argc, char** argv) {
  pheap_manager* m;
  metall_manager* mm;
  uint64_t* v;
  if (argc != 2) return 2;
  m = pheap_create(argv[1], NULL);
  if (m == NULL) {
    fprintf(stderr, "%s\n", pheap_errmsg());
    return 1;
  }
  v = pheap_named_malloc(m, "answer", sizeof *v);
  if (v == NULL) return 1;
  *v = 42;
  if (pheap_close(m) != 0) return 1;
  mm = metall_open_read_only(argv[1]);
  if (mm == NULL) return 1;
  v = metall_find(mm, "answer");
  printf("installed c %llu\n", v ? (unsigned long long)*v : 0ull);
  metall_close(mm);
  return 0;
}
