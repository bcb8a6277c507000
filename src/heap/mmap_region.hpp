// src/heap/mmap_region.hpp — backend_kind::mmap: the datastore's segment files mapped
// MAP_SHARED by the kernel (Metall-like). Internal; see pheap/options.hpp for the contract.
//
// Same datastore as the uffd backend, so either backend opens a datastore the other closed
// cleanly. It knows no file name, offset or lock rule: the store lays the region out in files
// and lists them (sparse_store::direct_extents). Differences:
//   * Read-write open: sparse_store::prepare_direct_mapping commits the root marked "open by
//     the mmap backend" (root_record::mmap_open) with the committed state at fixed offsets in
//     files that all exist, BEFORE they are mapped writable. From then on the kernel writes
//     pages back whenever it likes, so the files are a torn mix until the clean close: msync,
//     then sparse_store::finish_direct_mapping (the store's checksums follow the files) with
//     the root without the mark. A datastore whose last commit carries the mark is refused
//     by every open (errc::corrupt, "not closed cleanly") and by manager::consistent.
//   * flush() = msync(MS_SYNC): the data reaches the files, but no watermark is created.
//   * discard() = madvise(MADV_REMOVE): freed chunks become holes in the files at once.
//   * Read-only open maps PROT_READ and never writes. It needs the last commit laid out in
//     the files (sparse_store::direct_mapping_possible: any close by the mmap backend); a last
//     commit written by the uffd backend may not be, and is then refused with
//     errc::unavailable ("open it read-write once").
#pragma once

#include "heap/region.hpp"
