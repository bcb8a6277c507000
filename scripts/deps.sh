#!/usr/bin/env bash
# Installs what pheap needs to build and test, from Debian packages, when it is missing.
# As root it runs apt-get; otherwise it prints the command to run and fails.
set -euo pipefail

need=()
have_header() { [ -e "/usr/include/$1" ]; }
command -v cmake >/dev/null || need+=(cmake)
command -v ninja >/dev/null || need+=(ninja-build)
command -v g++ >/dev/null || need+=(g++)
command -v pkg-config >/dev/null || need+=(pkg-config)
have_header boost/version.hpp || need+=(libboost-dev)
have_header liburing.h || need+=(liburing-dev)
have_header isa-l/crc.h || need+=(libisal-dev)
have_header gtest/gtest.h || need+=(libgtest-dev)
have_header gmock/gmock.h || need+=(libgmock-dev)
# The command-line tools (CLI11, nlohmann-json) and compressed edge lists (zlib, libzstd).
have_header CLI/CLI.hpp || need+=(libcli11-dev)
have_header nlohmann/json.hpp || need+=(nlohmann-json3-dev)
have_header zlib.h || need+=(zlib1g-dev)
have_header zstd.h || need+=(libzstd-dev)
# File systems of the snapshot campaigns (tests/reliability/snapshot_fs_test.cpp: reflink on
# XFS and Btrfs loop images, sparse copy on ext4).
command -v mkfs.xfs >/dev/null || [ -x /sbin/mkfs.xfs ] || need+=(xfsprogs)
command -v mkfs.btrfs >/dev/null || [ -x /sbin/mkfs.btrfs ] || need+=(btrfs-progs)
for extra in "$@"; do
  dpkg -s "$extra" >/dev/null 2>&1 || need+=("$extra")
done

if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "pheap: missing packages: ${need[*]}" >&2
  echo "pheap: run as root: apt-get update && apt-get install -y ${need[*]}" >&2
  exit 1
fi
echo "pheap: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
