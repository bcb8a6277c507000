#!/usr/bin/env bash
# scripts/check_layers.sh can fail, for each thing it claims to refuse, and reads its map from
# LAYERS: on a copy of the tree's tracked files it passes, then fails for an upward include, a
# sideways include of another layer's private header, and a README table of layers that
# differs from LAYERS (which --readme then repairs); a path moved to another layer in LAYERS
# moves the verdict with it.
#   check_layers_map_test.sh REPO
set -uo pipefail
repo=$1
scratch=$(mktemp -d "${TMPDIR:-/tmp}/pheap-layers-test.XXXXXX")
trap 'rm -rf "$scratch" "$scratch.gitconfig"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# The tree may belong to another user (the test suite's unprivileged run): git refuses such a
# repository unless a global config marks it safe.
printf '[safe]\n\tdirectory = *\n' >"$scratch.gitconfig"
export GIT_CONFIG_GLOBAL=$scratch.gitconfig
(cd "$repo" && git ls-files -z | tar --null -T - -cf -) | tar -xf - -C "$scratch" || fail "copy"
cd "$scratch" && git init -q && git add -A || fail "git"
check() { out=$(scripts/check_layers.sh 2>&1); rc=$?; }

check
[ $rc -eq 0 ] || fail "the tree as it is: exit $rc: $out"

# Upward: the heap includes a graph header.
echo '#include "pheap/graph/store.hpp"' >>src/heap/region.cpp
check
[ $rc -eq 1 ] || fail "upward include: exit $rc"
grep -q "src/heap/region.cpp (heap) includes pheap/graph/store.hpp of the graph layer above it" <<<"$out" ||
  fail "upward include not named: $out"
git checkout -q -- src/heap/region.cpp

# Sideways: the heap includes a private header of the pager.
echo '#include "pager/page_table.hpp"' >>src/heap/region.cpp
check
[ $rc -eq 1 ] || fail "sideways include: exit $rc"
grep -q "a private header of the pager layer" <<<"$out" || fail "sideways include not named: $out"
git checkout -q -- src/heap/region.cpp

# The map decides: with src/heap/ moved above graph in LAYERS, the upward include is allowed.
echo '#include "pheap/graph/store.hpp"' >>src/heap/region.cpp
sed -i 's|^heap       3  src/heap/ |heap       3  |; s|^graph      4  graph/ |graph      4  graph/ src/heap/ |' LAYERS
scripts/check_layers.sh --readme >/dev/null || fail "--readme"
check
grep -q "src/heap/region.cpp" <<<"$out" && fail "LAYERS moved src/heap/ into graph, the check did not follow: $out"
git checkout -q -- src/heap/region.cpp LAYERS README.md

# README's table of layers is LAYERS, rendered.
sed -i 's/^| \*\*pager\*\* | 2 |/| **pager** | 9 |/' README.md
check
[ $rc -eq 1 ] || fail "README table edited: exit $rc"
grep -q "README.md's table of layers differs from LAYERS" <<<"$out" || fail "README drift not named: $out"
scripts/check_layers.sh --readme >/dev/null || fail "--readme"
check
[ $rc -eq 0 ] || fail "after --readme: exit $rc: $out"
echo "PASS"
