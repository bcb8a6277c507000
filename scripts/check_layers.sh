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

if [ "$violations" -gt 0 ]; then
  echo "layering: $violations violation(s)" >&2
  exit 1
fi
echo "layering: $(wc -w <<<"$files") files, every include points down or stays in its room"
