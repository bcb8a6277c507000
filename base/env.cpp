// The table of PHEAP_* variables and their typed accessors (contract: include/pheap/env.hpp).
// mimalloc's options.c is the model: every variable the library reads is one row here, and
// README.md's "Tuning" table lists the same rows (tests/io/env_test.cpp).
#include "pheap/env.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "pheap/error.hpp"

namespace pheap::env {

namespace {

// The choices of the word variables, in the order of the enums they spell (pheap::
// dirty_tracking, io engine, backend_kind, mmap_advice_kind, victim_caching, fault_filling,
// huge_pages_mode, read_only_cache's on/off: to_string of each reads its names from here).
constexpr spelling kTracking[] = {{"automatic", "auto"}, {"wp_async"}, {"wp_sync"}, {"all_resident"}};
constexpr spelling kEngine[] = {{"uring", "io_uring"}, {"posix"}};
constexpr spelling kBackend[] = {{"uffd"}, {"mmap"}};
constexpr spelling kAdvice[] = {{"normal"}, {"random"}};
constexpr spelling kVictimCache[] = {{"automatic", "auto"}, {"on"}, {"off"}};
constexpr spelling kFaultFill[] = {{"workers"}, {"faulting_thread"}, {"automatic"}};
constexpr spelling kHugePages[] = {{"off"}, {"always"}, {"auto", "automatic"}};
constexpr spelling kOnOff[] = {{"on"}, {"off"}};

// The order of the rows is the order of `var` (checked below).
constexpr variable kTable[] = {
    {.id = var::page_size, .name = "PHEAP_PAGE_SIZE", .type = kind::size,
     .default_value = "64 KiB", .meaning = "pager page (UPage) of new datastores",
     .min = 4096, .max = 64ull << 20, .power_of_two = true},
    {.id = var::buffer_size, .name = "PHEAP_BUFFER_SIZE", .type = kind::size,
     .default_value = "from the memory limit", .meaning = "DRAM the pager's region may hold"},
    {.id = var::memory_headroom, .name = "PHEAP_MEMORY_HEADROOM", .type = kind::size,
     .default_value = "1/8 of the memory limit, at least 16 MiB",
     .meaning = "memory an automatic buffer leaves at open for what the application allocates after it"},
    {.id = var::high_watermark, .name = "PHEAP_HIGH_WATERMARK", .type = kind::fraction,
     .default_value = "0.99", .meaning = "buffer occupancy at which background eviction starts (a small buffer: at least 2 pages below full)",
     .lo = 0, .hi = 1, .lo_open = true},
    {.id = var::low_watermark, .name = "PHEAP_LOW_WATERMARK", .type = kind::fraction,
     .default_value = "0.97", .meaning = "occupancy eviction brings the buffer back to (a small buffer: at least 8 pages below the high one)",
     .lo = 0, .hi = 1, .hi_open = true},
    {.id = var::dirty_tracking, .name = "PHEAP_DIRTY_TRACKING", .type = kind::word,
     .default_value = "automatic", .meaning = "how the pager learns which pages were written",
     .words = kTracking},
    {.id = var::fault_threads, .name = "PHEAP_FAULT_THREADS", .type = kind::count,
     .default_value = "2", .meaning = "workers reading the userfaultfd", .min = 1, .max = 64},
    {.id = var::read_ahead, .name = "PHEAP_READ_AHEAD", .type = kind::count,
     .default_value = "8 MiB of pages", .meaning = "ceiling of the read-ahead window of sequential or strided faults, in pages (0: off)", .min = 0, .max = 4096},
    {.id = var::write_behind, .name = "PHEAP_WRITE_BEHIND", .type = kind::count,
     .default_value = "0 (off)", .meaning = "write-behind period in ms: dirty pages untouched for a period are written to the store in the background, so a flush has less to write (wp_async tracking, in core only; 0: off)", .min = 0, .max = 60000},
    {.id = var::io_engine, .name = "PHEAP_IO_ENGINE", .type = kind::word,
     .default_value = "io_uring, else posix", .meaning = "the I/O engine of io::default_engine()",
     .words = kEngine},
    {.id = var::backend, .name = "PHEAP_BACKEND", .type = kind::word, .default_value = "uffd",
     .meaning = "how the heap is mapped: userfaultfd pager or kernel mmap", .words = kBackend},
    {.id = var::mmap_advice, .name = "PHEAP_MMAP_ADVICE", .type = kind::word,
     .default_value = "normal", .meaning = "madvise of the mmap backend's mapping (random: no read-around)",
     .words = kAdvice},
    {.id = var::victim_cache, .name = "PHEAP_VICTIM_CACHE", .type = kind::word,
     .default_value = "automatic",
     .meaning = "keep evicted pages where the kernel may take them back (MADV_FREE); automatic: on under a memory cgroup",
     .words = kVictimCache},
    {.id = var::fault_fill, .name = "PHEAP_FAULT_FILL", .type = kind::word,
     .default_value = "workers",
     .meaning = "who fills a missing page: the fault workers, or the faulting thread itself (SIGBUS handler; system calls on missing pages then fail with EFAULT); automatic: the faulting thread unless tracking is wp_sync (graph datastores' default)",
     .words = kFaultFill},
    {.id = var::huge_pages, .name = "PHEAP_HUGE_PAGES", .type = kind::word,
     .default_value = "off",
     .meaning = "always: map a region of 2 MiB (or larger) pages with 2 MiB page-table entries (a pool of transparent huge pages moved in whole), read-only opens too; smaller pages stay at 4 KiB",
     .words = kHugePages},
    {.id = var::read_only_cache, .name = "PHEAP_READ_ONLY_CACHE", .type = kind::word,
     .default_value = "on",
     .meaning = "read-only opens read segment data through the kernel's page cache, so the next job finds it in DRAM (off: O_DIRECT, the pager's buffer the only cache)",
     .words = kOnOff},
    {.id = var::pin_limit, .name = "PHEAP_PIN_LIMIT", .type = kind::size, .default_value = "4 GiB",
     .meaning = "the most bytes of copies a writer keeps for readers of older watermarks (sparse_store/FORMAT.md, \"Readers beside a writer\"); past it the oldest reader gets a stale error; fixed by the first process to attach",
     .min = 4096, .max = 16ull << 40},
    {.id = var::debug, .name = "PHEAP_DEBUG", .type = kind::count, .default_value = "0",
     .meaning = "1: the pager prints its buffer size and where it came from at open, the automatic "
                "buffer's target whenever it moves by 1/8, and its statistics at close",
     .min = 0, .max = 1},
};

constexpr bool rows_in_var_order() {
  for (unsigned i = 0; i < std::size(kTable); ++i) {
    if (static_cast<unsigned>(kTable[i].id) != i) return false;
  }
  return true;
}
static_assert(rows_in_var_order(), "kTable rows must follow the order of env::var");
static_assert(std::size(kTable) == static_cast<unsigned>(var::debug) + 1,
              "every env::var has a row");

// A variable's row and value (nullopt: unset or empty), for the accessor of kind `k`.
struct lookup_result {
  const variable& row;
  std::optional<std::string> value;
};
lookup_result lookup(var id, kind k) {
  const variable& d = kTable[static_cast<unsigned>(id)];
  assert(d.type == k);
  (void)k;
  const char* v = std::getenv(d.name);
  return {d, v != nullptr && *v != '\0' ? std::optional<std::string>(v) : std::nullopt};
}

// 4096 -> "4K", 64 MiB -> "64M", 1000 -> "1000".
std::string format_size(std::uint64_t n) {
  static const char suffix[] = {'\0', 'K', 'M', 'G', 'T'};
  unsigned i = 0;
  while (i + 1 < sizeof suffix && n >= 1024 && n % 1024 == 0) {
    n /= 1024;
    ++i;
  }
  std::string s = std::to_string(n);
  if (suffix[i] != '\0') s += suffix[i];
  return s;
}

std::string format_fraction_range(const variable& d) {
  std::ostringstream os;
  os << (d.lo_open ? '(' : '[') << d.lo << ", " << d.hi << (d.hi_open ? ')' : ']');
  return os.str();
}

// "expected automatic, wp_async, wp_sync or all_resident"
std::string expected_words(const variable& d) {
  std::string s = "expected ";
  for (std::size_t i = 0; i < d.words.size(); ++i) {
    if (i > 0) s += i + 1 == d.words.size() ? " or " : ", ";
    s += d.words[i].name;
  }
  return s;
}

}  // namespace

std::span<const variable> table() noexcept { return kTable; }

const variable& describe(var v) noexcept { return kTable[static_cast<unsigned>(v)]; }

[[noreturn]] void bad_env(const char* what, const std::string& value, const std::string& why) {
  throw error(errc::invalid_argument, "", std::string("read ") + what,
              "bad value '" + value + "': " + why);
}

std::uint64_t parse_size(const char* what, const std::string& v) {
  if (v.empty()) bad_env(what, v, "empty");
  std::size_t pos = 0;
  unsigned long long n = 0;
  try {
    if (v[0] == '-') throw std::invalid_argument("negative");
    n = std::stoull(v, &pos, 10);
  } catch (const std::exception&) {
    bad_env(what, v, "expected a number of bytes with an optional K/M/G/T suffix");
  }
  std::string suf = v.substr(pos);
  if (suf.size() == 2 && (suf[1] == 'B' || suf[1] == 'b')) suf.pop_back();
  if (suf.size() == 3 && (suf == "KiB" || suf == "MiB" || suf == "GiB" || suf == "TiB")) {
    suf = suf.substr(0, 1);
  }
  unsigned shift = 0;
  if (suf.empty()) {
    shift = 0;
  } else if (suf.size() == 1) {
    switch (suf[0]) {
      case 'k': case 'K': shift = 10; break;
      case 'm': case 'M': shift = 20; break;
      case 'g': case 'G': shift = 30; break;
      case 't': case 'T': shift = 40; break;
      default: bad_env(what, v, "unknown suffix (use K, M, G or T)");
    }
  } else {
    bad_env(what, v, "unknown suffix (use K, M, G or T)");
  }
  if (shift && n > (~0ull >> shift)) bad_env(what, v, "too large");
  return n << shift;
}

std::optional<std::uint64_t> size(var id) {
  const auto [d, v] = lookup(id, kind::size);
  if (!v) return std::nullopt;
  const std::uint64_t n = parse_size(d.name, *v);
  const bool pow2_ok = !d.power_of_two || (n & (n - 1)) == 0;
  if (n < d.min || n > d.max || !pow2_ok) {
    bad_env(d.name, *v, std::string("must be ") + (d.power_of_two ? "a power of two " : "") +
                            "from " + format_size(d.min) + " to " + format_size(d.max));
  }
  return n;
}

std::optional<double> fraction(var id) {
  const auto [d, v] = lookup(id, kind::fraction);
  if (!v) return std::nullopt;
  const std::string& s = *v;
  std::size_t pos = 0;
  double x = 0;
  try {
    x = std::stod(s, &pos);
  } catch (const std::exception&) {
    bad_env(d.name, s, "expected a fraction such as 0.9");
  }
  const bool above_lo = d.lo_open ? x > d.lo : x >= d.lo;
  const bool below_hi = d.hi_open ? x < d.hi : x <= d.hi;
  if (pos != s.size() || !std::isfinite(x) || !above_lo || !below_hi) {
    bad_env(d.name, s, "expected a fraction in " + format_fraction_range(d));
  }
  return x;
}

std::optional<unsigned> count(var id) {
  const auto [d, v] = lookup(id, kind::count);
  if (!v) return std::nullopt;
  const std::string& s = *v;
  std::size_t pos = 0;
  unsigned long long n = 0;
  try {
    if (s[0] == '-') throw std::invalid_argument("negative");
    n = std::stoull(s, &pos, 10);
  } catch (const std::exception&) {
    bad_env(d.name, s, "expected an integer");
  }
  if (pos != s.size() || n < d.min || n > d.max) {
    bad_env(d.name, s,
            "expected an integer in [" + std::to_string(d.min) + ", " + std::to_string(d.max) + "]");
  }
  return static_cast<unsigned>(n);
}

std::optional<unsigned> choice(var id) {
  const auto [d, v] = lookup(id, kind::word);
  if (!v) return std::nullopt;
  for (unsigned i = 0; i < d.words.size(); ++i) {
    const spelling& w = d.words[i];
    if (*v == w.name || (w.alias != nullptr && *v == w.alias)) return i;
  }
  bad_env(d.name, *v, expected_words(d));
}

std::optional<std::string_view> word(var id) {
  const auto i = choice(id);
  if (!i) return std::nullopt;
  return std::string_view(describe(id).words[*i].name);
}

const char* name_of_choice(var id, unsigned i) noexcept {
  const variable& d = describe(id);
  assert(d.type == kind::word && i < d.words.size());
  return i < d.words.size() ? d.words[i].name : "?";
}

}  // namespace pheap::env
