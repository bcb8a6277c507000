#!/usr/bin/env bash
# scripts/check_layers.sh's durable-I/O and OS-layer rules, run on a small repository of its
# own (a git checkout of a few files, the script copied in): a raw durable-I/O call in library
# code fails naming the file and the line; the same call in base/ (the seam), in an
# allowlisted file, in a comment, in tools/ or tests/, or a read-only open, passes. A system
# call on memory or descriptors (madvise, ioctl, mmap, syscall, eventfd; in the pager also
# read) outside an OS layer fails the same way, and passes in src/pager/os/, which may not
# include another pager file.
#   check_layers_test.sh REPO durable|os     (the rule whose claim the test name states)
set -uo pipefail
repo=$1 rule=${2:?durable or os}
scratch=$(mktemp -d "${TMPDIR:-/tmp}/pheap-check-layers.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$scratch" || exit 1
mkdir -p scripts base src/heap graph/src tools
cp "$repo/scripts/check_layers.sh" scripts/
cp "$repo/LAYERS" "$repo/README.md" .  # the layer map, and the README table rendered from it
put() { mkdir -p "$(dirname "$1")"; printf '%s\n' "$2" >"$1"; }
put base/posix_file.cpp 'void f(int fd) { ::fsync(fd); ::pwrite(fd, 0, 0, 0); }'
put graph/src/edge_io.cpp 'void f(int fd) { (void)!::write(fd, "x", 1); }'
put tools/tool.cpp 'void f(int fd) { ::fdatasync(fd); }'
put src/heap/clean.cpp '// a comment may say fsync(fd) or std::filesystem::remove_all(p)
int f(const char* p) { return ::open(p, O_RDONLY | O_CLOEXEC); }  // reads are not durable I/O
void g(engine& e) { e.rename("a", "b"); e.write(batch); }
long h(int fd, char* b) { return ::read(fd, b, 1); }  // outside the pager, reads are its own'
put src/pager/os/memory.cpp '#include "pager/os/memory.hpp"
void f(void* p, int fd) { ::madvise(p, 4096, 4); (void)::ioctl(fd, 1, p); (void)!::write(fd, p, 8); }'
put src/pager/evictor.cpp '#include "pager/os/memory.hpp"
void f(void* p) { os::drop(p, 4096); }  // through the OS layer'
run() { git init -q . 2>/dev/null; git add -A >/dev/null; out=$(scripts/check_layers.sh 2>&1); rc=$?; }

run
[ $rc -eq 0 ] || fail "a clean tree was refused (exit $rc): $out"
grep -q "no raw durable I/O outside the seam" <<<"$out" || fail "no durable-I/O summary: $out"

if [ "$rule" = durable ]; then
for call in '::fsync(fd);' 'fdatasync(fd);' '::pwrite(fd, b, n, 0);' '::write(fd, b, n);' \
  '::rename("a", "b");' 'unlink(p);' 'ftruncate(fd, 0);' 'fallocate(fd, 0, 0, 1);' \
  'std::filesystem::remove_all(p);' 'fs::rename(a, b);' 'std::filesystem::remove(p);' \
  '::open(p, O_WRONLY | O_CREAT, 0644);' '::open(p, O_RDWR);'; do
  put src/heap/bad.cpp "void f(int fd) {
  $call
}"
  run
  [ $rc -eq 1 ] || fail "'$call' in library code was not refused (exit $rc): $out"
  grep -q "src/heap/bad.cpp:2 makes a raw durable-I/O call outside the I/O seam" <<<"$out" ||
    fail "'$call': the refusal does not name the file and line: $out"
done
rm src/heap/bad.cpp
run
[ $rc -eq 0 ] || fail "removing the call did not make the tree clean again: $out"
echo "check_layers.sh refuses every raw durable-I/O call in library code and nothing else"
exit 0
fi

grep -q "no system call on memory or descriptors outside an OS layer" <<<"$out" ||
  fail "no OS-layer summary: $out"

for spot in 'src/heap/bad.cpp|::madvise(p, n, 4);' 'src/heap/bad.cpp|(void)::ioctl(fd, 1, &a);' \
  'src/heap/bad.cpp|::syscall(SYS_futex, 0);' 'src/heap/bad.cpp|madvise(p, n, 4);' 'src/heap/bad.cpp|p = ::mmap(nullptr, n, 3, 34, -1, 0);' \
  'graph/src/bad.cpp|int e = ::eventfd(0, 0);' 'src/pager/bad.cpp|(void)::read(fd, b, n);' \
  'src/pager/bad.cpp|(void)::open("/proc/self/pagemap", 0);'; do
  file=${spot%%|*} call=${spot#*|}
  put "$file" "void f(int fd) {
  $call
}"
  run
  [ $rc -eq 1 ] || fail "'$call' in $file was not refused (exit $rc): $out"
  grep -q "$file:2 makes a system call on memory or descriptors outside an OS layer" <<<"$out" ||
    fail "'$call': the refusal does not name $file and the line: $out"
  rm "$file"
done
put src/pager/os/threads.cpp '#include "pager/page_table.hpp"'
run
[ $rc -eq 1 ] && grep -q "src/pager/os/threads.cpp:1 includes a pager file from the OS layer" <<<"$out" ||
  fail "the OS layer including a pager file was not refused (exit $rc): $out"
rm src/pager/os/threads.cpp
run
[ $rc -eq 0 ] || fail "the tree with its OS layer was refused: $out"
echo "check_layers.sh refuses every system call on memory or descriptors outside an OS layer, and nothing else"
