// pheap/fault_guard.hpp — damaged data as an exception instead of SIGBUS.
//
// A page of a datastore whose store read fails (its checksum does not match, or the disk
// returns EIO) cannot be filled, and the kernel lets the pager answer the access in one way
// only: SIGBUS (pheap/pager.hpp, "Caveats"). guard_faults(f) runs f() and turns such a SIGBUS,
// raised on the calling thread by an access to a pager region of this process, into the
// store's pheap::error — errc::corrupt (or errc::io) naming the segment or journal file, the
// page and its offset — thrown from guard_faults:
//
//   try {
//     pheap::guard_faults([&] { for (auto& x : *v) sum += x; });
//   } catch (const pheap::error& e) {   // "pheap: read /data/g1/segment-000000: page 17 ..."
//   }
//
// Any other SIGBUS (a truncated file mapped by someone else, a signal sent by kill) goes to
// the handler that was installed before pheap's, or ends the process as it would have.
// Once a manager met a damaged page, manager::consistent() is false.
//
// Caveats (read these: the guard leaves f by siglongjmp, not by unwinding):
//   * The destructors of every frame between guard_faults and the faulting access are skipped,
//     and locks taken in them stay taken. Guard only code that owns nothing that needs
//     releasing: read loops over the heap whose results are plain values, like the tools'
//     (`pheap ls`, `pheap-graph stats`). Do not guard code that writes to the heap, allocates
//     from it, or holds a lock of yours.
//   * Only the calling thread is guarded; threads started inside f are not.
//   * Guards nest: the innermost catches.
//   * Only regions of the userfaultfd pager (backend_kind::uffd) are recognised; with the mmap
//     backend a damaged page is not detected on access (pheap check finds it). The pager
//     poisons with UFFDIO_POISON (Linux 6.6); on older kernels it signals the faulting thread
//     with tgkill, which the guard does not catch (the process dies by SIGBUS, as before).
//   * The process-wide SIGBUS/SIGSEGV handlers are installed when the first pager maps its
//     region. A handler installed later by the application replaces them (then faults are not
//     explained); one installed earlier is called for every signal that is not pheap's.
//   * A write through a pointer into a heap opened read-only is SIGSEGV, not an exception:
//     one line naming the datastore and the address is printed to stderr, then the process
//     dies by SIGSEGV (guard_faults does not catch it: the access is a bug, not bad data).
#pragma once

#include <optional>
#include <type_traits>
#include <utility>

namespace pheap {

namespace detail {
// Runs fn(ctx) with this thread's guard armed; see guard_faults.
void run_fault_guarded(void (*fn)(void*), void* ctx);
}  // namespace detail

// Runs f() and returns its result; a SIGBUS from a damaged page (see above) is thrown as the
// store's pheap::error. Exceptions thrown by f pass through unchanged.
template <class F>
std::invoke_result_t<F&> guard_faults(F&& f) {
  using R = std::invoke_result_t<F&>;
  static_assert(!std::is_reference_v<R>, "guard_faults: return a value, not a reference");
  if constexpr (std::is_void_v<R>) {
    detail::run_fault_guarded([](void* c) { (*static_cast<std::remove_reference_t<F>*>(c))(); },
                              &f);
  } else {
    struct ctx_t {
      std::remove_reference_t<F>* f;
      std::optional<R> result;
    } ctx{&f, std::nullopt};
    detail::run_fault_guarded([](void* c) {
      auto* x = static_cast<ctx_t*>(c);
      x->result.emplace((*x->f)());
    }, &ctx);
    return std::move(*ctx.result);
  }
}

}  // namespace pheap
