// Region registry, SIGBUS/SIGSEGV handlers and the fault guard (protocol in fault_signals.hpp).
#include "pager/fault_signals.hpp"

#include <setjmp.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "pager/os/threads.hpp"
#include "pheap/error.hpp"
#include "pheap/fault_guard.hpp"

namespace pheap::paging {

struct region_record {
  std::string name;
  std::size_t page_size = 0;
  std::uintptr_t begin = 0;
  std::mutex mu;  // guards log and the writers of notes
  std::map<std::uintptr_t, std::exception_ptr> log;  // page address → the store's error
  // The last few poisonings as text, for the SIGBUS handler (which can take no lock): a note
  // is written with its page cleared and published by storing the page (release); a reader
  // copies the text and checks the page again.
  struct note {
    std::atomic<std::uintptr_t> page{0};
    char text[640];
  };
  std::array<note, 8> notes;
  unsigned next_note = 0;  // under mu
};

namespace {

// One registered region; see "register" in the header for the publication order.
struct slot {
  std::atomic<std::uintptr_t> begin{0}, end{0};  // end == 0: free
  std::atomic<bool> read_only{false};
  std::atomic<pid_t> owner{0};
  std::atomic<const char*> name{nullptr};
  std::atomic<region_record*> rec{nullptr};
  std::atomic<bool (*)(void*, std::uintptr_t, bool)> fill{nullptr};
  std::atomic<void*> fill_ctx{nullptr};
};

std::array<slot, kSlots> g_slots;
std::mutex g_mu;  // registration, unregistration and the guard's lookups (never in a handler)
struct sigaction g_old_bus, g_old_segv;
std::once_flag g_installed;

// The armed guard of this thread (initial-exec: no lazy TLS allocation inside a handler).
struct guard_frame {
  sigjmp_buf env;
  volatile std::uintptr_t addr = 0;  // the faulting address
  guard_frame* prev = nullptr;
};
__attribute__((tls_model("initial-exec"))) thread_local guard_frame* t_frame = nullptr;

// The slot whose region holds `a`: one of this process first; else one a fork() child
// inherited from its parent (whose region the child does not have).
const slot* find_slot(std::uintptr_t a) noexcept {
  const pid_t self = ::getpid();
  const slot* inherited = nullptr;
  for (const slot& s : g_slots) {
    const std::uintptr_t end = s.end.load(std::memory_order_acquire);
    if (end == 0 || a < s.begin.load(std::memory_order_relaxed) || a >= end) continue;
    if (s.owner.load(std::memory_order_relaxed) == self) return &s;
    inherited = &s;
  }
  return inherited;
}

// ---- async-signal-safe output ---------------------------------------------------------------

struct line_buf {
  char b[1024];
  std::size_t n = 0;
  void put(const char* s) noexcept {
    while (*s && n < sizeof b - 1) b[n++] = *s++;
  }
  void hex(std::uintptr_t v) noexcept {
    char t[2 + 2 * sizeof v];
    std::size_t k = 0;
    do {
      t[k++] = "0123456789abcdef"[v & 15];
      v >>= 4;
    } while (v != 0);
    put("0x");
    while (k > 0 && n < sizeof b - 1) b[n++] = t[--k];
  }
  void emit() noexcept {
    b[n++] = '\n';
    os::write_line_signal_safe(b, n);
  }
};

// The default action of `sig`, now: for a fault, returning retries the access, which then
// meets it; a signal sent by kill(2)/tgkill(2) is raised again.
void default_action(int sig, const siginfo_t* si) noexcept {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  if (si->si_code <= 0) ::raise(sig);
}

void chain(int sig, siginfo_t* si, void* uc, const struct sigaction& old) noexcept {
  if (old.sa_flags & SA_SIGINFO) {
    if (old.sa_sigaction != nullptr) old.sa_sigaction(sig, si, uc);
  } else if (old.sa_handler == SIG_DFL) {
    default_action(sig, si);
  } else if (old.sa_handler != SIG_IGN) {
    old.sa_handler(sig);
  }
}

// Whether the access that raised a fault's SIGBUS was a write. x86-64 puts the page fault's
// error code in the signal frame (REG_TRAPNO 14 = #PF, REG_ERR bit 1 = write: the kernel's
// do_sigbus keeps it for a user-mode fault); elsewhere it is not known and the answer is no.
// Only a fill's cost depends on it (a write fill is mapped writable, a read fill
// write-protected), never its result.
bool was_write(const void* uc) noexcept {
#if defined(__x86_64__)
  if (uc == nullptr) return false;
  const mcontext_t& m = static_cast<const ucontext_t*>(uc)->uc_mcontext;
  return m.gregs[REG_TRAPNO] == 14 && (m.gregs[REG_ERR] & 2) != 0;
#else
  (void)uc;
  return false;
#endif
}

// The one line an unguarded SIGBUS on a poisoned page of ours gets before the process dies
// of it: the pager's words for the store's error (note_poisoned), else that the page is
// poisoned. A guarded one prints nothing: its guard throws the same error for the caller.
void say_unguarded_sigbus(const slot& s, std::uintptr_t a) noexcept {
  const region_record* r = s.rec.load(std::memory_order_acquire);
  if (r == nullptr || r->page_size == 0) return;
  const std::uintptr_t page = a - (a - r->begin) % r->page_size;
  line_buf l;
  l.put("pheap: pager ");
  l.put(s.name.load(std::memory_order_relaxed));
  l.put(": ");
  for (const region_record::note& n : r->notes) {
    if (n.page.load(std::memory_order_acquire) != page) continue;
    char text[sizeof n.text];
    std::memcpy(text, n.text, sizeof text);
    text[sizeof text - 1] = '\0';
    if (n.page.load(std::memory_order_acquire) != page) break;  // rewritten meanwhile
    l.put(text);
    l.put("; the access was not inside pheap::guard_faults: SIGBUS");
    l.emit();
    return;
  }
  l.put("SIGBUS at ");
  l.hex(a);
  l.put(": the page is poisoned (reading it from the store failed) and the access was not "
        "inside pheap::guard_faults");
  l.emit();
}

void on_sigbus(int sig, siginfo_t* si, void* uc) {
  if (si->si_code == BUS_ADRERR) {  // a missing page of a faulting-thread-fill region
    const auto a = reinterpret_cast<std::uintptr_t>(si->si_addr);
    const slot* s = find_slot(a);
    if (s != nullptr && s->owner.load(std::memory_order_relaxed) == ::getpid()) {
      if (auto f = s->fill.load(std::memory_order_acquire); f != nullptr) {
        const int saved = errno;
        const bool filled = f(s->fill_ctx.load(std::memory_order_relaxed), a, was_write(uc));
        errno = saved;
        if (filled) return;  // the access is retried
      }
    }
  }
  guard_frame* g = t_frame;
  if (g != nullptr) {
    const auto a = reinterpret_cast<std::uintptr_t>(si->si_addr);
    const slot* s = si->si_code > 0 ? find_slot(a) : nullptr;  // a fault, not a kill(2)
    if (s != nullptr && s->owner.load(std::memory_order_relaxed) == ::getpid()) {
      g->addr = a;
      siglongjmp(g->env, 1);
    }
  }
  if (si->si_code > 0) {
    const auto a = reinterpret_cast<std::uintptr_t>(si->si_addr);
    const slot* s = find_slot(a);
    if (s != nullptr && s->owner.load(std::memory_order_relaxed) == ::getpid()) say_unguarded_sigbus(*s, a);
  }
  chain(sig, si, uc, g_old_bus);
}

void on_sigsegv(int sig, siginfo_t* si, void* uc) {
  const auto a = reinterpret_cast<std::uintptr_t>(si->si_addr);
  const slot* s = si->si_code > 0 ? find_slot(a) : nullptr;
  if (s != nullptr) {
    const bool child = s->owner.load(std::memory_order_relaxed) != ::getpid();
    if (child || (s->read_only.load(std::memory_order_relaxed) && si->si_code == SEGV_ACCERR)) {
      line_buf l;
      l.put("pheap: SIGSEGV at ");
      l.hex(a);
      l.put(child ? " in the heap of datastore " : ": write into the heap of datastore ");
      l.put(s->name.load(std::memory_order_relaxed));
      l.put(child ? ", which a fork() child does not inherit (open the datastore again in the "
                    "child)"
                  : ", which is open read-only (open it with open_only to modify it)");
      l.emit();
      default_action(sig, si);
      return;
    }
  }
  chain(sig, si, uc, g_old_segv);
}

void install_handlers() {
  struct sigaction sa {};
  // SIGBUS on the thread's own stack: a fill there reads the store (an alternate signal stack,
  // e.g. a sanitizer's, may be a few KiB), and no SIGBUS of ours comes from a full stack.
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sa.sa_sigaction = on_sigbus;
  ::sigaction(SIGBUS, &sa, &g_old_bus);
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sa.sa_sigaction = on_sigsegv;
  ::sigaction(SIGSEGV, &sa, &g_old_segv);
}

// The error to throw for a guarded SIGBUS at `addr`: the store's, as logged by the pager.
std::exception_ptr explain_sigbus(std::uintptr_t addr) {
  std::lock_guard lk(g_mu);
  for (const slot& s : g_slots) {
    region_record* r = s.rec.load(std::memory_order_relaxed);
    if (r == nullptr || s.owner.load(std::memory_order_relaxed) != ::getpid() ||
        addr < s.begin.load(std::memory_order_relaxed) ||
        addr >= s.end.load(std::memory_order_relaxed)) {
      continue;
    }
    const std::uintptr_t page = addr - (addr - r->begin) % r->page_size;
    std::lock_guard lr(r->mu);
    if (auto it = r->log.find(page); it != r->log.end()) return it->second;
    const std::uintptr_t n = (page - r->begin) / r->page_size;
    return std::make_exception_ptr(
        error(errc::corrupt, r->name, "read page " + std::to_string(n),
              "page " + std::to_string(n) + " (offset " + std::to_string(page - r->begin) +
                  ") is poisoned: reading it from the store failed"));
  }
  // Unregistered between the fault and now: the manager was closed by another thread.
  return std::make_exception_ptr(error(errc::corrupt, "", "read page",
                                       "SIGBUS: a page of a datastore could not be read"));
}

}  // namespace

// ---- registration -------------------------------------------------------------------------

region_registration::region_registration(const std::byte* base, std::size_t size,
                                         std::size_t page_size, bool read_only,
                                         const std::string& name)
    : rec_(std::make_unique<region_record>()) {
  rec_->name = name;
  rec_->page_size = page_size;
  rec_->begin = reinterpret_cast<std::uintptr_t>(base);
  std::call_once(g_installed, install_handlers);
  std::lock_guard lk(g_mu);
  for (std::size_t i = 0; i < kSlots; ++i) {
    slot& s = g_slots[i];
    // Free, or inherited by this fork() child from its parent (the child may map a region of its
    // own at the same addresses).
    if (s.end.load(std::memory_order_relaxed) != 0 && s.owner.load(std::memory_order_relaxed) == ::getpid()) {
      continue;
    }
    s.begin.store(rec_->begin, std::memory_order_relaxed);
    s.read_only.store(read_only, std::memory_order_relaxed);
    s.owner.store(::getpid(), std::memory_order_relaxed);
    s.name.store(rec_->name.c_str(), std::memory_order_relaxed);
    s.rec.store(rec_.get(), std::memory_order_relaxed);
    s.fill.store(nullptr, std::memory_order_relaxed);  // a parent's, in a fork() child
    s.end.store(rec_->begin + size, std::memory_order_release);
    slot_ = static_cast<int>(i);
    return;
  }
}

region_registration::region_registration() noexcept = default;
region_registration::~region_registration() { release(); }

region_registration::region_registration(region_registration&& o) noexcept
    : rec_(std::move(o.rec_)), slot_(std::exchange(o.slot_, -1)) {}

region_registration& region_registration::operator=(region_registration&& o) noexcept {
  if (this != &o) {
    release();
    rec_ = std::move(o.rec_);
    slot_ = std::exchange(o.slot_, -1);
  }
  return *this;
}

void region_registration::release() noexcept {
  if (slot_ >= 0) {
    std::lock_guard lk(g_mu);
    slot& s = g_slots[static_cast<std::size_t>(slot_)];
    // Still ours: a fork() child may have taken over the slot its parent's copy names.
    if (s.rec.load(std::memory_order_relaxed) == rec_.get() &&
        s.owner.load(std::memory_order_relaxed) == ::getpid()) {
      s.end.store(0, std::memory_order_release);
      s.fill.store(nullptr, std::memory_order_relaxed);
      s.rec.store(nullptr, std::memory_order_relaxed);
      s.name.store(nullptr, std::memory_order_relaxed);
    }
    slot_ = -1;
  }
  rec_.reset();
}

bool region_registration::set_fill(bool (*fill)(void*, std::uintptr_t, bool), void* ctx) noexcept {
  if (slot_ < 0) return false;
  slot& s = g_slots[static_cast<std::size_t>(slot_)];
  s.fill_ctx.store(ctx, std::memory_order_relaxed);
  s.fill.store(fill, std::memory_order_release);
  return true;
}

void region_registration::note_poisoned(const std::byte* page, std::exception_ptr why) {
  if (!rec_) return;
  const auto a = reinterpret_cast<std::uintptr_t>(page);
  std::string what = "the store's read failed";
  try {
    std::rethrow_exception(why);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  const std::size_t n = (a - rec_->begin) / rec_->page_size;
  std::lock_guard lk(rec_->mu);
  rec_->log[a] = std::move(why);
  region_record::note& note = rec_->notes[rec_->next_note++ % rec_->notes.size()];
  note.page.store(0, std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_release);
  std::snprintf(note.text, sizeof note.text, "page %zu (offset %zu) could not be read: %s", n,
                static_cast<std::size_t>(a - rec_->begin), what.c_str());
  note.page.store(a, std::memory_order_release);
}

}  // namespace pheap::paging

namespace pheap::detail {

void run_fault_guarded(void (*fn)(void*), void* ctx) {
  using paging::t_frame;
  paging::guard_frame g;
  g.prev = t_frame;
  if (sigsetjmp(g.env, 1) != 0) {
    // Arrived from on_sigbus: the frames of fn are gone (see the caveats in fault_guard.hpp).
    t_frame = g.prev;
    std::rethrow_exception(paging::explain_sigbus(g.addr));
  }
  t_frame = &g;
  try {
    fn(ctx);
  } catch (...) {
    t_frame = g.prev;
    throw;
  }
  t_frame = g.prev;
}

}  // namespace pheap::detail
