#!/usr/bin/env bash
# The layering rule as a check that can fail (run by scripts/test.sh, and by hand).
#
# Rooms, bottom to top (README "Layout"):
#   io      sparse_store/io/        the I/O seam, CRC32C, errors, PHEAP_* parsing
#   store   sparse_store/           the page store
#   pager   src/pager/              the userfaultfd pager
#   heap    src/heap/               allocator, named objects, datastore lifecycle
#   graph   graph/, include/pheap/graph/
#   compat  compat/ (the Metall drop-in, namespace metall): beside graph, on the heap's public API
#   mpi     src/mpi/, include/pheap/mpi/ (pheap::mpi, optional): beside graph, above the heap
#   graph_mpi  graph/mpi/, include/pheap/graph/mpi/ (pheap::graph::mpi, optional): distributed
#           graphs, above both graph and mpi
#   capi    src/capi/, include/pheap/pheap.h (the C API, pheap::c): above the heap and graph
#   tools   tools/, graph/tools/, examples/ (private headers: tools/support/, as "support/…")
#   python  python/ (the Python package's extension): above the C++ API, beside nothing
# Public headers (include/pheap/) belong to the room of what they declare (table below).
#
# A file of the library, its public headers, the tools or the examples may include
#   * a public header of its own room or of a room below it, and
#   * a private header of its own room (its folder, by relative path or "<room>/…").
# Anything else fails: an include of a higher room (upward), of another room's private
# headers (sideways: "no layer knows another's file names"), or of tests/, fuzz/, bench/.
# compat/ includes public pheap headers up to the heap and its own headers (<metall/...>, found
# under compat/metall/include/); nothing else includes <metall/...>.
# tests/, bench/ and fuzz/ are white-box and may include anything.
#
# Every durable byte goes through the I/O seam (include/pheap/io.hpp, io::engine), so that the
# fault-injecting engine of the reliability campaigns reaches it. Library code (sparse_store/,
# src/, graph/ but graph/tools/, compat/, include/) outside the io layer (sparse_store/io/)
# fails on a raw durable-I/O call: ::open with O_CREAT, O_WRONLY or O_RDWR, ::write, pwrite,
# fsync, fdatasync, ::rename / std::rename, unlink, ftruncate, fallocate, fopen for writing,
# std::filesystem's remove_all / rename / remove — unless the file is in the allowlist below
# with its reason (durable_io_allowed). Comments are not code. tools/, tests/, bench/, fuzz/
# and python/ are not library code.
#
#   scripts/check_layers.sh            prints each violation; exit 1 if there is one
set -uo pipefail
cd "$(dirname "$0")/.."

rank() {  # room → height
  case $1 in io) echo 0 ;; store) echo 1 ;; pager) echo 2 ;; heap) echo 3 ;; compat) echo 3 ;;
    graph) echo 4 ;; mpi) echo 4 ;; graph_mpi) echo 5 ;; capi) echo 5 ;; tools) echo 6 ;;
    python) echo 7 ;; *) echo 99 ;; esac
}

# The room a public header belongs to.
public_room() {
  case $1 in
    pheap/io.hpp | pheap/error.hpp | pheap/crc32c.hpp | pheap/env.hpp) echo io ;;
    pheap/sparse_store.hpp | pheap/stats.hpp) echo store ;;
    pheap/pager.hpp | pheap/pager_options.hpp | pheap/fault_guard.hpp) echo pager ;;
    pheap/graph/mpi/*) echo graph_mpi ;;
    pheap/graph/*) echo graph ;;
    pheap/pheap.h) echo capi ;;
    pheap/mpi/*) echo mpi ;;
    pheap/*) echo heap ;;
    *) echo unknown ;;
  esac
}

# The room of a source file (by path), or "" for white-box code (tests, bench, fuzz).
file_room() {
  case $1 in
    sparse_store/io/*) echo io ;;
    sparse_store/*) echo store ;;
    src/pager/*) echo pager ;;
    src/heap/*) echo heap ;;
    src/mpi/*) echo mpi ;;
    src/capi/*) echo capi ;;
    graph/tools/*) echo tools ;;
    include/pheap/graph/mpi/* | graph/mpi/*) echo graph_mpi ;;
    include/pheap/graph/* | graph/*) echo graph ;;
    include/pheap/mpi/*) echo mpi ;;
    include/pheap/*) public_room "${1#include/}" ;;
    tools/* | examples/*) echo tools ;;
    compat/*) echo compat ;;
    python/*) echo python ;;
    *) echo "" ;;
  esac
}

violations=0
fail() {
  echo "layering: $1" >&2
  violations=$((violations + 1))
}

files=$(git ls-files 'sparse_store/*.[ch]pp' 'src/*.[ch]pp' 'include/*.hpp' 'include/*.h' 'graph/*.[ch]pp' \
  'tools/*.[ch]pp' 'examples/*.[ch]pp' 'compat/*.[ch]pp' 'compat/*.h' \
  'python/*.[ch]pp')  # graph/tools/ is in graph/*
for f in $files; do
  room=$(file_room "$f")
  [ -n "$room" ] || continue
  r=$(rank "$room")
  dir=$(dirname "$f")
  while IFS= read -r line; do
    inc=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^">]+)[">].*/\1/' <<<"$line")
    case $inc in
      pheap/*)
        proom=$(public_room "$inc")
        if [ ! -f "include/$inc" ]; then
          fail "$f includes <$inc>, which is not a public header"
        elif [ "$(rank "$proom")" -gt "$r" ]; then
          fail "$f ($room) includes $inc of the $proom layer above it"
        fi
        ;;
      metall/*)
        if [ "$room" != compat ]; then
          fail "$f ($room) includes <$inc> of the Metall compatibility layer"
        elif [ ! -f "compat/metall/include/$inc" ]; then
          fail "$f includes <$inc>, which the compatibility layer does not have"
        fi
        ;;
      *.hpp | *.h)
        # A private header: relative to the file, or "<room>/…" under src/.
        target=""
        if [ -f "$dir/$inc" ]; then
          target=$(realpath --relative-to=. "$dir/$inc")
        elif [ -f "src/$inc" ]; then
          target="src/$inc"
        elif [ -f "tools/$inc" ]; then
          target="tools/$inc"  # the tools' include path (tools/CMakeLists.txt)
        elif [ -f "$inc" ]; then
          target="$inc"  # a path from the project root: only white-box code may do that
          fail "$f includes \"$inc\" by its path from the project root"
          continue
        else
          continue  # a system or third-party header
        fi
        troom=$(file_room "$target")
        if [ -z "$troom" ]; then
          fail "$f ($room) includes $target, which is not library code"
        elif [ "$troom" != "$room" ]; then
          fail "$f ($room) includes $target, a private header of the $troom layer"
        elif [[ $f == include/* && $target != include/* ]]; then
          fail "public header $f includes the private header $target"
        fi
        ;;
    esac
  done < <(grep -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]' "$f")
done

# ---- durable I/O only through the seam ---------------------------------------------------

# Files of the library that may make raw durable-I/O calls, and why. Everything else of the
# library writes, syncs, renames and removes through an io::engine.
durable_io_allowed() {
  case $1 in
    # The pager's OS layer (issue 45 item 1 consolidates it): eventfd wake-ups (::write of a
    # counter), the fault handler's stderr line, /dev/userfaultfd opened O_RDWR, and the
    # memory-limit pool's shared state file under /dev/shm (O_RDWR|O_CREAT, ftruncate, unlink
    # of abandoned ones) — none is datastore data.
    src/pager/fault_signals.cpp | src/pager/fault_workers.cpp | src/pager/pager.cpp | \
      src/pager/limit_pool.cpp | src/pager/uffd.cpp) return 0 ;;
    # The graph's export writer (pheap-graph export, edge_writer): the user's output file, not
    # datastore data; a crash leaves a partial export the user reruns.
    graph/src/edge_io.cpp) return 0 ;;
    # The Metall drop-in's clear_destination: rmdir of an EMPTY directory before pheap's own
    # creation makes the datastore there (Metall's create semantics); no data.
    compat/metall/include/metall/basic_manager.hpp) return 0 ;;
  esac
  return 1
}

io_calls='(^|[^[:alnum:]_])::(write|pwrite|pwritev|pwrite64|rename|renameat|renameat2)[[:space:]]*\('
io_calls+='|(^|[^[:alnum:]_.>:])(::)?(fsync|fdatasync|pwrite|pwritev|pwrite64|unlink|unlinkat|ftruncate|fallocate|posix_fallocate)[[:space:]]*\('
io_calls+='|(^|[^[:alnum:]_])::(open|openat)[[:space:]]*\(.*O_(CREAT|WRONLY|RDWR)'
io_calls+='|(^|[^[:alnum:]_.>:])(std::)?fopen[[:space:]]*\(.*"[wa]'
io_calls+='|std::(rename|remove)[[:space:]]*\('
io_calls+='|(std::filesystem|fs)::(remove_all|rename|remove)[[:space:]]*\('
io_files=$(git ls-files 'sparse_store/*.[ch]pp' 'src/*.[ch]pp' 'src/*.h' 'include/*.hpp' 'include/*.h' \
  'graph/*.[ch]pp' 'compat/*.[ch]pp' 'compat/*.h' | grep -v -e '^sparse_store/io/' -e '^graph/tools/')
io_checked=0
for f in $io_files; do
  io_checked=$((io_checked + 1))
  durable_io_allowed "$f" && continue
  # Code only: line comments cut, lines inside block comments ("* ...") blanked.
  while IFS= read -r hit; do
    fail "$f:${hit%%:*} makes a raw durable-I/O call outside the I/O seam (use an io::engine, or allowlist the file in scripts/check_layers.sh with its reason): ${hit#*:}"
  done < <(sed -E -e 's@//.*$@@' -e 's@^[[:space:]]*\*.*$@@' "$f" | grep -nE "$io_calls")
done

if [ "$violations" -gt 0 ]; then
  echo "layering: $violations violation(s)" >&2
  exit 1
fi
echo "layering: $(wc -w <<<"$files") files, every include points down or stays in its room;" \
  "$io_checked library files, no raw durable I/O outside the seam and the allowlist"
