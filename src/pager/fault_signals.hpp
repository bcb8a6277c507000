// src/pager/fault_signals.hpp — what a SIGBUS or SIGSEGV inside a pager region means, told to
// the thread that took it (public side: include/pheap/fault_guard.hpp).
//
// The kernel leaves a signal as the only outcome of three accesses to a region (and of a
// fourth, asked for: (d) below):
//   (a) a page whose store read failed (checksum or I/O) is poisoned (UFFDIO_POISON): every
//       access to it is SIGBUS (BUS_MCEERR_AR, or BUS_ADRERR as seen on Linux 6.18 here;
//       si_addr = the address). Before Linux 6.6 the pager sends SIGBUS to the faulting
//       thread with tgkill instead: that one carries no address, is not told apart from any
//       kill(2), and is not caught by the guard;
//   (b) a write into a read-only region (mapped PROT_READ) is SIGSEGV (SEGV_ACCERR); with huge
//       pages the region is mapped writable and write-protected by userfaultfd instead
//       (huge_pool.hpp, "Read-only opens"), and the pager turns the write's fault into the
//       same SIGSEGV: it makes the page PROT_READ and lets the access retry;
//   (c) an access from a fork() child (the region is MADV_DONTFORK) is SIGSEGV (SEGV_MAPERR).
//   (d) with fault_fill = faulting_thread (UFFD_FEATURE_SIGBUS), an access to a missing page
//       is SIGBUS (BUS_ADRERR, si_addr = the address) instead of a message to the workers.
//
// Protocol.
//   register   A pager registers its region once mapped (region_registration, a member of
//              pager_impl) and unregisters it before unmapping: begin, end, read_only, the
//              registering pid and the store path go into one of kSlots lock-free slots.
//              Writers (register, unregister) hold g_mu; `end` is stored last with release
//              order and cleared first, so a handler that sees end != 0 sees the whole slot.
//              A fork() child inherits its parent's slots (the memory, not the regions): they
//              explain an access to the parent's region, and a registration of the child's
//              own may take them over (its region can lie at the same addresses).
//              The first registration installs the SIGBUS and SIGSEGV handlers (SA_SIGINFO |
//              SA_ONSTACK) and keeps the previous actions.
//   log        When a fault worker poisons a page it logs the store's error (page address →
//              exception) with the registration, before the poison is installed, so it is
//              there when the retried access raises SIGBUS.
//   fill       A SIGBUS with BUS_ADRERR at an address of a slot of this process whose pager set
//              a fill function (case (d), or (a) on a kernel that reports a poisoned page so)
//              calls it on the faulting thread, with whether the access was a write (the
//              page fault's error code in the signal frame, x86-64; elsewhere "no"): it fills
//              the page (or waits for its filler or owner) and returns true, and so does the
//              handler; the access is retried. For a poisoned page it returns false and the
//              SIGBUS goes on to the guard. This runs store reads in a signal handler: the
//              fill takes the pager's locks and allocates, which is safe because the
//              interrupted code was touching heap memory, never inside the pager, the store
//              or malloc. The SIGBUS handler runs on the thread's own stack (no SA_ONSTACK),
//              not on a small alternate one. A registration clears the fill of the slot it
//              takes (a fork() child's slot may hold its parent's).
//   guard      run_fault_guarded (fault_guard.hpp) arms a thread-local frame (sigsetjmp) and
//              runs the callable. A SIGBUS of case (a) on an armed thread (a fault, si_code >
//              0, at an address of a registered region) siglongjmps back to the frame, which
//              then, outside signal context, looks the page up in the log and throws the
//              store's error (errc::corrupt or io, naming the segment file and the page).
//   explain    A SIGSEGV of case (b) or (c) writes one line naming the datastore, the address
//              and the cause to stderr (write(2), no allocation), restores the default action
//              and returns: the access is retried and the process dies by SIGSEGV as before.
//   chain      Every other SIGBUS or SIGSEGV goes to the previous action (a handler, or the
//              default action: for a signal sent by kill(2) it is raised again, since
//              returning would not repeat it).
//
// Apart from the fill, the handlers read only the slots and the thread-local frame: atomic
// loads, write(2), sigaction(2), raise(3), siglongjmp(3) — all async-signal-safe. Up to kSlots regions may be
// registered at once; further ones work normally but their faults are not explained
// (registration reports false).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>

namespace pheap::paging {

inline constexpr std::size_t kSlots = 64;

// Whether a fill called from the SIGBUS handler learns if the access was a write (the page
// fault's error code in the signal frame: x86-64 only; elsewhere it is told "no").
#if defined(__x86_64__)
inline constexpr bool kSigbusTellsWrites = true;
#else
inline constexpr bool kSigbusTellsWrites = false;
#endif

struct region_record;  // the log and the name; lives as long as the registration

class region_registration {
 public:
  region_registration() noexcept;
  // Registers [base, base + size) of the store at `name`.
  region_registration(const std::byte* base, std::size_t size, std::size_t page_size,
                      bool read_only, const std::string& name);
  ~region_registration();
  region_registration(region_registration&&) noexcept;
  region_registration& operator=(region_registration&&) noexcept;
  region_registration(const region_registration&) = delete;
  region_registration& operator=(const region_registration&) = delete;

  // Fills on the faulting thread: from now on a SIGBUS with BUS_ADRERR at an address of the
  // region calls fill(ctx, addr, write) on the thread that took it (write: the access was a
  // write, where the signal frame says so: x86-64; else false); when fill returns true the handler
  // returns and the access is retried; false (a poisoned page, whose SIGBUS may carry
  // BUS_ADRERR too) goes on to the guard. False when the region has no slot (more than kSlots
  // registered).
  bool set_fill(bool (*fill)(void*, std::uintptr_t, bool), void* ctx) noexcept;
  // Accesses to `page` (its address in the region) fail with `why`, the store's error.
  void note_poisoned(const std::byte* page, std::exception_ptr why);
  // Unregisters (also done by the destructor).
  void release() noexcept;

 private:
  std::unique_ptr<region_record> rec_;
  int slot_ = -1;
};

}  // namespace pheap::paging
