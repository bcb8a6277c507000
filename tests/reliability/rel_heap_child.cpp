// rel_heap_child — the victim process of the heap kill and resource-limit campaigns.
//
//   rel_heap_child [--nofile N] [--guard-reads] [--as-nobody] [--no-io-uring] [--fault-engine]
//                  [--crash-in-close K] [--snapshot-every K] [--huge] MODE ARGS...
//     --nofile N     setrlimit(RLIMIT_NOFILE, N) first (soft and hard)
//     --guard-reads  verify reads the heap inside pheap::guard_faults: a page the store cannot
//                    read (e.g. no descriptor for its segment) is the store's error, not SIGBUS
//     --as-nobody    setgroups(0)/setgid/setuid(65534) first (needs root)
//     --no-io-uring  a seccomp filter makes io_uring_setup(2) fail with EPERM, as
//                    kernel.io_uring_disabled=2 does, for this process only
//     --fault-engine the datastore's io engine is test::make_fault_engine(io::default_engine()),
//                    so PHEAP_FAULT_CRASH_AT / PHEAP_FAULT_EIO_AT (pheap/io.hpp) in the
//                    environment inject crashes / EIO; mix modes then also print
//                    "io open-reads N" after "opened" and "io reads N" at the end (read
//                    operations counted by the engine so far), and likewise
//                    "io open-writes N" / "io open-syncs N" / "io open-metadata N" and
//                    "io writes N" / "io syncs N" / "io metadata N" (write, sync and
//                    metadata operations)
//     --crash-in-close K  (with --fault-engine, mix-close) _exit(86) just before the K-th
//                    I/O operation (any kind) after "closing": a crash exactly mid-close
//     --snapshot-every K  (mix) after the ack of every step S with S % K == 0, snapshot the
//                    heap to DIR.snap-S: prints "snapshotting S", then "snapshot S EPOCH"
//                    when manager::snapshot() returned (the copy holds step S)
//     --huge     (mix, mix-close; also REL_HEAP_CHILD_HUGE=1 in the environment, which a
//                    campaign sets for all its victims: mixc::huge_victims) a new datastore has
//                    2 MiB pages, the heap is opened with huge_pages = always (every fill one
//                    PMD mapping, pheap/pager_options.hpp) and BUFFER is at least 4 pages;
//                    after each "ack S ...", "huge FILLS MAPPED" (pager_stats::huge_fills so
//                    far, huge_mapped_bytes now)
//     --huge-auto  (mix) as --huge, but huge_pages = auto with a promoter round every 2 ms
//                    (src/pager/promoter.hpp): fills at 4 KiB, promotions while the steps run;
//                    "huge PROMOTIONS MAPPED" after each ack
//   The core size limit is set to 0 (victims are killed on purpose; no core files), and SIGBUS
//   gets its default action (also under sanitizers: a read error during a fault kills).
//
//   mix DIR SEED MAX_STEPS BUFFER
//       Opens the datastore DIR read-write (recovering whatever a killed victim left), or
//       creates it when DIR does not exist, with a BUFFER-byte pager buffer (and, for an odd
//       SEED, the victim cache on). Rebuilds the DRAM
//       reference of tests/reliability/heap_mix_workload.hpp up to the step the heap holds,
//       then runs steps s+1 .. s+MAX_STEPS, each followed by flush(). Prints, flushed:
//           starting                      (about to open or create DIR)
//           opened S                      (the heap holds step S; "opened -1": empty heap)
//           flushing S                    (about to flush step S)
//           ack S DIGEST EPOCH            (flush of step S returned: durable)
//           closed                        (after the destructor's flush, exit 0)
//
//   mix-close DIR SEED MAX_STEPS BUFFER
//       As mix, then applies step s+1 WITHOUT flush() and closes (the destructor's final
//       flush makes it durable). Prints after the acks:
//           closing S                     (about to destroy the manager holding step S)
//           closed S OPS                  (closed: step S is durable; OPS = I/O operations
//                                          of the close with --fault-engine, else 0)
//
//   roundtrip DIR MIB
//       Creates DIR with 64 KiB segments, writes MIB MiB of pattern in a named vector (so the
//       datastore has about 16 * MIB segment files), flushes, closes, reopens read-write and
//       read-only and verifies every byte. Prints "engine NAME" (the io engine that did it)
//       and "ok".
//
//   uffd-source
//       Prints "uffd SOURCE": how the pager obtains its userfaultfd in this process.
//
//   verify DIR MIB
//       Opens an existing roundtrip datastore read-write then read-only and verifies it.
//       Prints "ok".
//
// The io engine is io::default_engine() (PHEAP_IO_ENGINE honoured). Exit status: 0 done,
// 1 a pheap::error (on stdout: "error CODE ERRNO MESSAGE", CODE the integer pheap::errc), 2 usage, 3 setup (rlimit, setuid),
// 4 wrong content, 86 crash injected by the fault engine.
#include <grp.h>
#include <signal.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "pheap/container.hpp"
#include "pheap/pheap.hpp"
#include "pager/os/uffd.hpp"
#include "reliability/heap_mix_workload.hpp"
#include "support/fault_engine.hpp"

namespace {

using namespace pheap;
namespace mix = pheap::test::mix;

void say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

std::shared_ptr<test::fault_engine> g_fault;  // --fault-engine
bool g_huge = false;                           // --huge
bool g_huge_auto = false;                      // --huge-auto (with g_huge)
bool g_guard_reads = false;                   // --guard-reads: verify inside pheap::guard_faults
std::uint64_t g_crash_in_close = 0;          // --crash-in-close K
std::uint64_t g_snapshot_every = 0;          // --snapshot-every K

// "io reads N" / "io writes N" / "io syncs N" ("io open-reads N", ... after the open).
void say_reads(const char* what) {
  if (!g_fault) return;
  const std::string w = what;
  const std::string prefix = w == "open-reads" ? "open-" : "";
  say("io " + w + " " + std::to_string(g_fault->operations(test::op_kind::read)));
  say("io " + prefix + "writes " + std::to_string(g_fault->operations(test::op_kind::write)));
  say("io " + prefix + "syncs " + std::to_string(g_fault->operations(test::op_kind::sync)));
  say("io " + prefix + "metadata " + std::to_string(g_fault->operations(test::op_kind::metadata)));
}

int run_mix(const std::string& dir, std::uint64_t seed, std::uint64_t max_steps, std::size_t buffer,
            bool dirty_close) {
  options opt = mix::heap_options(buffer);
  if (g_huge) mix::use_huge_pages(opt);  // (buffer at least 4 pages)
  if (g_huge_auto) {
    opt.pager.huge_pages = huge_pages_mode::automatic;
    opt.pager.huge_promote_ms = 2;
  }
  if (g_fault) opt.engine = g_fault;
  // Jobs of odd seeds fill evicted pages from the victim cache where it kept them: its copies
  // feed fills whose pages are written back later, so a wrong copy would reach the store.
  if (seed % 2 == 1) opt.pager.victim_cache = victim_caching::on;
  say("starting");
  std::unique_ptr<manager> m;
  if (std::filesystem::exists(dir)) {
    m = std::make_unique<manager>(open_only, dir, opt);
  } else {
    m = std::make_unique<manager>(create_only, dir, opt);
  }
  mix::heap_objects h = mix::find_objects(*m);
  mix::model ref;
  if (h.step == nullptr) {
    say("opened -1");
    h = mix::init_objects(*m);
    say("flushing 0");
    const auto e = m->flush();
    say("ack 0 " + std::to_string(ref.digest()) + " " + std::to_string(e));
  } else {
    say("opened " + std::to_string(*h.step));
    say_reads("open-reads");
    while (ref.step < *h.step) ref.next_step(seed);
  }
  for (std::uint64_t i = 0; i < max_steps; ++i) {
    const auto ops = ref.next_step(seed);
    for (const auto& o : ops) mix::apply(*m, h, o);
    *h.step = ref.step;
    say("flushing " + std::to_string(ref.step));
    const auto e = m->flush();
    say("ack " + std::to_string(ref.step) + " " + std::to_string(ref.digest()) + " " + std::to_string(e));
    if (g_huge) {
      const pager_stats ps = m->stats().pager;
      say("huge " + std::to_string(g_huge_auto ? ps.huge_promotions : ps.huge_fills) + " " +
          std::to_string(ps.huge_mapped_bytes));
    }
    if (g_snapshot_every > 0 && ref.step % g_snapshot_every == 0) {
      say("snapshotting " + std::to_string(ref.step));
      const auto se = m->snapshot(dir + ".snap-" + std::to_string(ref.step));
      say("snapshot " + std::to_string(ref.step) + " " + std::to_string(se));
    }
  }
  if (!dirty_close) {
    m.reset();
    say("closed");
    say_reads("reads");
    return 0;
  }
  // The next step stays dirty in the buffer; the close's final flush commits it.
  for (const auto& o : ref.next_step(seed)) mix::apply(*m, h, o);
  *h.step = ref.step;
  const std::uint64_t ops0 = g_fault ? g_fault->operations(test::op_kind::any) : 0;
  if (g_fault && g_crash_in_close > 0) {
    g_fault->add_rule({test::op_kind::any, ops0 + g_crash_in_close, test::fault_action::crash, false});
  }
  say("closing " + std::to_string(ref.step));
  m.reset();
  const std::uint64_t ops = g_fault ? g_fault->operations(test::op_kind::any) - ops0 : 0;
  say("closed " + std::to_string(ref.step) + " " + std::to_string(ops));
  say_reads("reads");
  return 0;
}

bool refuse_io_uring() {
#if defined(__x86_64__)
  constexpr std::uint32_t arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
  constexpr std::uint32_t arch = AUDIT_ARCH_AARCH64;
#else
  return false;
#endif
  sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof f / sizeof f[0]), f};
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

using u64vec = container::vector<std::uint64_t>;

options roundtrip_options() {
  options o;
  o.capacity = 64ull << 20;
  o.page_size = 4096;
  o.segment_size = 64ull << 10;
  o.chunk_size = 64ull << 10;
  o.pager.buffer_size = 1ull << 20;
  return o;
}

int verify(const manager& m, std::uint64_t n) {
  auto [v, len] = m.find<u64vec>("data");
  if (v == nullptr || len != 1 || v->size() != n) {
    say("wrong content: data vector missing or of the wrong size");
    return 4;
  }
  for (std::uint64_t i = 0; i < n; ++i) {
    if ((*v)[i] != mix::mix64(i)) {
      say("wrong content at element " + std::to_string(i));
      return 4;
    }
  }
  if (const auto p = m.check(); !p.empty()) {
    say("check: " + p.front());
    return 4;
  }
  return 0;
}

// Verifies through the heap; with --guard-reads inside pheap::guard_faults, so that a page the
// store cannot read is the store's error (exit 1, "error ..."), as a program that guards its
// reads sees it, instead of the pager's SIGBUS.
int guarded_verify(const manager& m, std::uint64_t n) {
  if (!g_guard_reads) return verify(m, n);
  int rc = 0;
  guard_faults([&] { rc = verify(m, n); });
  return rc;
}

int run_verify(const std::string& dir, std::uint64_t mib) {
  const std::uint64_t n = (mib << 20) / 8;
  {
    manager m(open_only, dir, roundtrip_options());
    if (int rc = guarded_verify(m, n); rc != 0) return rc;
  }
  {
    manager m(open_read_only, dir, roundtrip_options());
    if (int rc = guarded_verify(m, n); rc != 0) return rc;
  }
  say("ok");
  return 0;
}

int run_roundtrip(const std::string& dir, std::uint64_t mib) {
  const std::uint64_t n = (mib << 20) / 8;
  {
    manager m(create_only, dir, roundtrip_options());
    auto* v = m.construct<u64vec>("data")(m.get_allocator<>());
    v->reserve(n);
    for (std::uint64_t i = 0; i < n; ++i) v->push_back(mix::mix64(i));
    m.flush();
  }
  say("engine " + io::default_engine()->name());
  return run_verify(dir, mib);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> a(argv + 1, argv + argc);
  {
    const rlimit no_core{0, 0};
    (void)::setrlimit(RLIMIT_CORE, &no_core);
    // A read error during a page fault must end the victim by SIGBUS itself, also under
    // sanitizers (which install their own SIGBUS handler and exit with a report instead).
    ::signal(SIGBUS, SIG_DFL);
  }
  try {
    while (!a.empty() && a[0].rfind("--", 0) == 0) {
      if (a[0] == "--nofile" && a.size() >= 2) {
        const rlimit rl{std::stoull(a[1]), std::stoull(a[1])};
        if (::setrlimit(RLIMIT_NOFILE, &rl) != 0) return 3;
        a.erase(a.begin(), a.begin() + 2);
      } else if (a[0] == "--as-nobody") {
        if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) return 3;
        ::prctl(PR_SET_DUMPABLE, 1);  // setuid made us non-dumpable; /proc/self must be ours
        a.erase(a.begin());
      } else if (a[0] == "--guard-reads") {
        g_guard_reads = true;
        a.erase(a.begin());
      } else if (a[0] == "--no-io-uring") {
        if (!refuse_io_uring()) return 3;
        a.erase(a.begin());
      } else if (a[0] == "--huge") {
        g_huge = true;
        a.erase(a.begin());
      } else if (a[0] == "--huge-auto") {
        g_huge = g_huge_auto = true;
        a.erase(a.begin());
      } else if (a[0] == "--fault-engine") {
        g_fault = test::make_fault_engine(io::default_engine());
        a.erase(a.begin());
      } else if (a[0] == "--crash-in-close" && a.size() >= 2) {
        g_crash_in_close = std::stoull(a[1]);
        a.erase(a.begin(), a.begin() + 2);
      } else if (a[0] == "--snapshot-every" && a.size() >= 2) {
        g_snapshot_every = std::stoull(a[1]);
        a.erase(a.begin(), a.begin() + 2);
      } else {
        return 2;
      }
    }
    if (const char* h = std::getenv("REL_HEAP_CHILD_HUGE"); h != nullptr && std::string(h) == "1") g_huge = true;
    if (a.size() == 5 && (a[0] == "mix" || a[0] == "mix-close")) {
      return run_mix(a[1], std::stoull(a[2]), std::stoull(a[3]), std::stoull(a[4]), a[0] == "mix-close");
    }
    if (a.size() == 3 && a[0] == "roundtrip") return run_roundtrip(a[1], std::stoull(a[2]));
    if (a.size() == 1 && a[0] == "uffd-source") {
      const auto r = paging::open_userfaultfd("probe");
      ::close(r.fd);
      say(std::string("uffd ") + paging::to_string(r.source));
      return 0;
    }
    if (a.size() == 3 && a[0] == "verify") return run_verify(a[1], std::stoull(a[2]));
    std::fprintf(stderr, "usage: rel_heap_child [--nofile N] [--guard-reads] [--as-nobody] [--no-io-uring] [--fault-engine] [--crash-in-close K] [--snapshot-every K] [--huge] [--huge-auto] mix|mix-close|roundtrip|verify|uffd-source ...\n");
    return 2;
  } catch (const error& e) {
    say("error " + std::to_string(static_cast<int>(e.code())) + " " + std::to_string(e.sys_errno()) + " " +
        e.what());
    return 1;
  } catch (const std::exception& e) {
    say(std::string("exception ") + e.what());
    return 5;
  }
}
