#!/usr/bin/env bash
# The layering rule as a check that can fail (run by scripts/test.sh, and by hand).
#
# The rooms (layers), their heights and the folders and public headers each one holds come
# from LAYERS at the root, the one map of folder -> layer; README.md's table of layers is
# rendered from it too (between its "layers:" markers: --readme rewrites it, the check fails
# when it differs).
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
# src/, graph/, compat/, include/) outside the I/O seam's own folder (base/)
# fails on a raw durable-I/O call: ::open with O_CREAT, O_WRONLY or O_RDWR, ::write, pwrite,
# fsync, fdatasync, ::rename / std::rename, unlink, ftruncate, fallocate, fopen for writing,
# std::filesystem's remove_all / rename / remove — unless the file is in the allowlist below
# with its reason (durable_io_allowed). Comments are not code. tools/, tests/, bench/, fuzz/
# and python/ are not library code.
#
# System calls on memory and descriptors (ioctl, madvise, process_madvise, mmap, munmap,
# mprotect, syscall, eventfd, epoll, poll; in src/pager also read, open, flock, fstat, unlink)
# are made only in an OS layer: src/pager/os/ for the pager, and the few files of
# os_calls_allowed below with their reasons. src/pager/os/ includes no other pager file.
#
#   scripts/check_layers.sh            prints each violation; exit 1 if there is one
#   scripts/check_layers.sh --readme   rewrites README.md's table of layers from LAYERS
set -uo pipefail
cd "$(dirname "$0")/.."

# ---- the map (LAYERS) -----------------------------------------------------------------------
map_paths=() map_rooms=()  # every path of LAYERS and its room
declare -A heights=() what=()
order=()  # the rooms, bottom to top
while IFS= read -r line; do
  [[ $line =~ ^[[:space:]]*(#|$) ]] && continue
  desc=${line#* -- }
  read -r room height paths <<<"${line%% -- *}"
  order+=("$room")
  heights[$room]=$height
  what[$room]=$desc
  for p in $paths; do
    map_paths+=("$p")
    map_rooms+=("$room")
  done
done <LAYERS

render_readme_table() {
  echo "| layer | height | folders and public headers | what |"
  echo "|---|---|---|---|"
  local room i list
  for room in "${order[@]}"; do
    list=""
    for i in "${!map_paths[@]}"; do
      [ "${map_rooms[$i]}" = "$room" ] && list+="${list:+, }\`${map_paths[$i]}\`"
    done
    echo "| **$room** | ${heights[$room]} | $list | ${what[$room]} |"
  done
}

readme_begin='<!-- layers: generated from LAYERS by scripts/check_layers.sh --readme -->'
readme_end='<!-- end of layers -->'
if [ "${1:-}" = --readme ]; then
  table=$(render_readme_table)
  awk -v b="$readme_begin" -v e="$readme_end" -v t="$table" '
    $0 == b { print; print t; skip = 1; next }
    $0 == e { skip = 0 }
    !skip { print }' README.md >README.md.new && mv README.md.new README.md
  echo "layering: README.md's table of layers rewritten from LAYERS"
  exit 0
fi

# The room of a path of the tree: the room of the longest LAYERS path covering it (a folder
# path covers everything under it, a file path itself), or "" for white-box code (tests,
# bench, fuzz). Sets $room_of rather than printing it (no subshell: it runs for every include
# of the tree) and remembers each answer. A room's height is ${heights[$room]:-99} (99: not a
# room).
declare -A room_cache=()
file_room() {
  if [[ -v room_cache[$1] ]]; then room_of=${room_cache[$1]}; return; fi
  local best="" len=-1 i p
  for i in "${!map_paths[@]}"; do
    p=${map_paths[$i]}
    if [[ $p == */ ]]; then [[ $1 == "$p"* ]] || continue; else [ "$1" = "$p" ] || continue; fi
    if [ "${#p}" -gt "$len" ]; then best=${map_rooms[$i]}; len=${#p}; fi
  done
  room_cache[$1]=$best
  room_of=$best
}

violations=0
fail() {
  echo "layering: $1" >&2
  violations=$((violations + 1))
}

files=$(git ls-files 'base/*.[ch]pp' 'sparse_store/*.[ch]pp' 'src/*.[ch]pp' 'include/*.hpp' 'include/*.h' 'graph/*.[ch]pp' \
  'tools/*.[ch]pp' 'examples/*.[ch]pp' 'compat/*.[ch]pp' 'compat/*.h' \
  'python/*.[ch]pp')
include_re='^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^">]+)[">]'
for f in $files; do
  file_room "$f"; room=$room_of
  [ -n "$room" ] || continue
  r=${heights[$room]:-99}
  dir=${f%/*}
  while IFS= read -r line; do
    [[ $line =~ $include_re ]] || continue
    inc=${BASH_REMATCH[1]}
    case $inc in
      pheap/*)
        file_room "include/$inc"; proom=${room_of:-unknown}
        if [ ! -f "include/$inc" ]; then
          fail "$f includes <$inc>, which is not a public header"
        elif [ "${heights[$proom]:-99}" -gt "$r" ]; then
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
        file_room "$target"; troom=$room_of
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

# README.md's table of layers is LAYERS, rendered.
readme_table=$(awk -v b="$readme_begin" -v e="$readme_end" '$0 == e { on = 0 } on { print } $0 == b { on = 1 }' README.md)
if [ "$readme_table" != "$(render_readme_table)" ]; then
  fail "README.md's table of layers differs from LAYERS (scripts/check_layers.sh --readme rewrites it)"
fi

# ---- durable I/O only through the seam ---------------------------------------------------

# Files of the library that may make raw durable-I/O calls, and why. Everything else of the
# library writes, syncs, renames and removes through an io::engine.
durable_io_allowed() {
  case $1 in
    # The pager's OS layer: the eventfd wake-up (a ::write of a counter) and the signal
    # handler's stderr line (threads.cpp), /dev/userfaultfd opened O_RDWR (uffd.cpp), the
    # limit pool's shared state file under /dev/shm (files.cpp: O_RDWR|O_CREAT, ftruncate,
    # unlink of abandoned ones) — none is datastore data.
    src/pager/os/*.cpp) return 0 ;;
    # The store's reader table (shared_map.cpp): zeros written under pheap.readers' shared
    # mapping before it is used — the shared memory of readers and the writer, never synced,
    # not datastore data.
    sparse_store/shared_map.cpp) return 0 ;;
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
  'graph/*.[ch]pp' 'compat/*.[ch]pp' 'compat/*.h')
io_checked=0
for f in $io_files; do
  io_checked=$((io_checked + 1))
  durable_io_allowed "$f" && continue
  # Code only: line comments cut, lines inside block comments ("* ...") blanked.
  while IFS= read -r hit; do
    fail "$f:${hit%%:*} makes a raw durable-I/O call outside the I/O seam (use an io::engine, or allowlist the file in scripts/check_layers.sh with its reason): ${hit#*:}"
  done < <(sed -E -e 's@//.*$@@' -e 's@^[[:space:]]*\*.*$@@' "$f" | grep -nE "$io_calls")
done

# ---- system calls on memory and descriptors only in an OS layer -----------------------------

# The library's files that talk to the kernel about memory and descriptors directly, and why:
# the pager's OS layer (src/pager/os/, memory.hpp says what it holds), the kernel-mmap
# backend (it is a mapping of the segment files), the graph's input reader (maps an input file
# read-only), the store's reader table (shared_map.cpp: a MAP_SHARED map of pheap.readers and
# OFD byte locks on it, the readers' and the writer's shared memory). base/ is the I/O seam and
# not checked.
os_calls_allowed() {
  case $1 in
    src/pager/os/*) return 0 ;;
    sparse_store/shared_map.cpp) return 0 ;;
    src/heap/mmap_region.cpp) return 0 ;;
    graph/src/input_source.cpp) return 0 ;;
  esac
  return 1
}

os_calls='(^|[^[:alnum:]_.>:])(::)?(ioctl|madvise|process_madvise|mmap|munmap|mremap|mprotect|syscall|eventfd|epoll_create1|epoll_ctl|epoll_wait)[[:space:]]*\('
os_calls+='|(^|[^[:alnum:]_.>:])::poll[[:space:]]*\('
# In the pager, reads, opens and locks of descriptors too: the uffd's events, /proc and cgroup
# files, the limit pool's shared file. (The store's flock of its lock files is its protocol,
# sparse_store/FORMAT.md, and stays beside it.)
pager_os_calls=$os_calls'|(^|[^[:alnum:]_.>:])::(read|open|openat|flock|fstat|unlink)[[:space:]]*\('
os_checked=0
for f in $io_files; do
  os_calls_allowed "$f" && continue
  os_checked=$((os_checked + 1))
  pattern=$os_calls
  case $f in src/pager/*) pattern=$pager_os_calls ;; esac
  while IFS= read -r hit; do
    fail "$f:${hit%%:*} makes a system call on memory or descriptors outside an OS layer (src/pager/os/ for the pager; or allowlist the file in scripts/check_layers.sh with its reason): ${hit#*:}"
  done < <(sed -E -e 's@//.*$@@' -e 's@^[[:space:]]*\*.*$@@' "$f" | grep -nE "$pattern")
done

# The OS layer is the bottom of the pager's room: it includes nothing of the pager's own.
for f in $(git ls-files 'src/pager/os/*.[ch]pp'); do
  while IFS= read -r hit; do
    fail "$f:${hit%%:*} includes a pager file from the OS layer (src/pager/os/ stands on the system and base/ only): ${hit#*:}"
  done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"pager/' "$f" | grep -vE '"pager/os/')
done

if [ "$violations" -gt 0 ]; then
  echo "layering: $violations violation(s)" >&2
  exit 1
fi
echo "layering: $(wc -w <<<"$files") files, every include points down or stays in its room;" \
  "$io_checked library files, no raw durable I/O outside the seam and the allowlist;" \
  "$os_checked, no system call on memory or descriptors outside an OS layer"
