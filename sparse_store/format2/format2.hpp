// sparse_store/format2/format2.hpp — format-2 datastores, read only. Format 3 (the rest of
// sparse_store/) replaced format 2's journal-and-checkpoint protocol; this folder keeps what
// reading a format-2 datastore needs, so `pheap upgrade` (sparse_store::upgrade) can convert
// one: the format-2 superblock, the segments with their header slots and CRC tables, and the
// committed journal, replayed in memory as format 2's read-only open did. Nothing here writes.
#pragma once

#include <memory>
#include <string>

#include "pheap/io.hpp"
#include "pheap/sparse_store.hpp"

namespace pheap::store::format2 {

// Opens the format-2 datastore DIR read-only (shared lock) as a sparse_store: reads verify
// every page (segment CRC tables, journal CRCs); every mutation throws errc::read_only,
// snapshot and direct mapping errc::older_format. Throws as format 2's read-only open did
// (not_found, not_a_datastore, locked, corrupt naming the file) and invalid_argument if DIR is
// not a format-2 datastore.
std::unique_ptr<sparse_store> open_read_only(const std::string& dir, std::shared_ptr<io::engine> eng);

}  // namespace pheap::store::format2
