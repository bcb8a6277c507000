// TSan's options for the suites that fill pages on the faulting thread. Linked into them as the
// object library pheap_tsan_signal_fills (tests/support/CMakeLists.txt), so each such binary has
// exactly one definition; a suite that needs it links it, it does not define its own.
//
// Fills on the faulting thread run the pager's fill — locks, allocation, store reads — inside
// pheap's SIGBUS handler, by design (pheap/pager.hpp, "Fills on the faulting thread"). TSan
// reports every allocation inside any signal handler as signal-unsafe; the rule guards against a
// signal that interrupts malloc, and this SIGBUS only ever interrupts an access to the heap
// region, which malloc never makes. Data races are still reported.
#if defined(__SANITIZE_THREAD__)
extern "C" const char* __tsan_default_options() { return "report_signal_unsafe=0"; }
#endif
