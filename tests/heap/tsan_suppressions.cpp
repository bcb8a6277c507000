// Default ThreadSanitizer suppressions for the heap tests that run the real pager (read by
// TSan at start-up; inert in other builds).
//
// The pager copies dirty pages out of the region (memcpy in flush_chunk / take_by_move) while
// application threads keep writing those pages. That is by design: per-page atomicity of the
// copy comes from userfaultfd write-protect / UFFDIO_MOVE, which TSan cannot see. Heap
// metadata is not involved (it is only written under the world lock, which flush holds
// exclusively), so nothing of the heap's own synchronisation is hidden by these entries.
extern "C" const char* __tsan_default_suppressions() {
  return "race:pheap::paging::flusher::flush_chunk\n"
         "race:pheap::paging::dirty_tracker::take_by_move\n";
}
