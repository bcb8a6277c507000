#!/usr/bin/env bash
# scripts/check_layers.sh's durable-I/O rule, run on a small repository of its own (a git
# checkout of a few files, the script copied in): a raw durable-I/O call in library code fails
# naming the file and the line; the same call in base/ (the seam), in an allowlisted file, in a
# comment, in tools/ or tests/, or a read-only open, passes.
#   check_layers_test.sh REPO
set -uo pipefail
repo=$1
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
void g(engine& e) { e.rename("a", "b"); e.write(batch); }'
run() { git init -q . 2>/dev/null; git add -A >/dev/null; out=$(scripts/check_layers.sh 2>&1); rc=$?; }

run
[ $rc -eq 0 ] || fail "a clean tree was refused (exit $rc): $out"
grep -q "no raw durable I/O outside the seam" <<<"$out" || fail "no durable-I/O summary: $out"

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
