// ThreadSanitizer suppressions for the snapshot campaigns (read by TSan at start-up; inert in
// other builds). Same entries as tests/heap/tsan_suppressions.cpp, for the same reason: the
// pager copies dirty pages out of the region (memcpy in flush_chunk / take_by_move) while
// application threads keep writing them — per-page atomicity comes from userfaultfd
// write-protect / UFFDIO_MOVE, which TSan cannot see. The writers' in-place cell stores are
// exactly such writes. Heap metadata is not involved (written only under the world lock).
extern "C" const char* __tsan_default_suppressions() {
  return "race:pheap::paging::flusher::flush_chunk\n"
         "race:pheap::paging::dirty_tracker::take_by_move\n";
}
