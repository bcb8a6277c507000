// src/heap/mmap_region.hpp — backend_kind::mmap: the datastore's segment files mapped
// MAP_SHARED by the kernel (Metall-like). Internal; see pheap/options.hpp for the contract.
//
// Same directory and files as the uffd backend (pheap.super + segment-NNNNNN, FORMAT.md), so
// either backend opens a datastore the other closed cleanly. Differences:
//   * Read-write open: the store recovers (journal checkpointed into the segments), every
//     missing segment file is created sparse (so the store's next commit declares it), and a
//     commit records the root marked "open by the mmap backend" (root_record::mmap_open)
//     BEFORE the segments are mapped writable. From then on the kernel writes pages back
//     whenever it likes, so the files are a torn mix until the clean close: msync, then a
//     commit of the root without the mark. A datastore whose last commit carries the mark is
//     refused by every open (errc::corrupt, "not closed cleanly") and by manager::consistent.
//   * flush() = msync(MS_SYNC): the data reaches the files, but no watermark is created.
//   * discard() = madvise(MADV_REMOVE): freed chunks become holes in the files at once.
//   * Read-only open maps PROT_READ and never writes. It needs the segments to hold the
//     last commit, i.e. a commit without journal pages (any close by the mmap backend); a
//     last commit written by the uffd backend (journal length > 0) is refused with
//     errc::unavailable ("open it read-write once"): its pages may still be in the journal.
#pragma once

#include "heap/region.hpp"
