// pheap/env.hpp — the PHEAP_* environment variables: one table, typed accessors, one size parser.
//
// Every variable the library reads is one entry of table() (base/env.cpp, the
// bottom of the stack, so that the io seam can read PHEAP_IO_ENGINE): its name, kind,
// default, range and meaning. The layers read the environment only through the accessors
// below; none calls getenv itself. README.md ("Tuning") lists exactly the entries of the
// table, with the same defaults (tests/io/env_test.cpp fails when they drift apart).
//
// Rules, the same for every variable:
//   * unset or empty: the accessor returns nullopt and the caller's default applies (the
//     defaults themselves live with the options they set: pager_options, options, ...).
//   * a malformed or out-of-range value throws error(invalid_argument) naming the variable
//     and the value, e.g. "pheap: read PHEAP_PAGE_SIZE: bad value '5K': must be a power of
//     two from 4K to 64M".
//   * sizes: decimal bytes with an optional K, M, G or T suffix (powers of 1024), which may be
//     followed by B or written KiB, MiB, ...: "65536", "64K", "64KiB", "1G" (parse_size).
//   * fractions: a decimal number; counts: a decimal integer; words: one of the listed words.
//
// Caveats:
//   * A variable is read each time its accessor is called. Only the from_env() functions
//     (options::from_env, pager_options::from_env) and io::default_engine() (PHEAP_IO_ENGINE,
//     once per process) call the accessors; a default-constructed options{} reads nothing.
//   * Relations between variables (low watermark below the high one) are checked by the
//     layer that owns them (pager_options::from_env), with bad_env().
//   * The fault engine's variables (PHEAP_FAULT_CRASH_AT, _EIO_AT, _ENOSPC_AT) are test gear
//     (tests/support/), read by it alone, and not part of this table.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace pheap::env {

// One per library variable, in table order.
enum class var : unsigned {
  page_size,
  buffer_size,
  memory_headroom,
  high_watermark,
  low_watermark,
  dirty_tracking,
  fault_threads,
  read_ahead,
  write_behind,
  io_engine,
  backend,
  mmap_advice,
  victim_cache,
  fault_fill,
  huge_pages,
  read_only_cache,
  pin_limit,
  debug,
};

// One choice of a word variable: its name (what to_string of the matching enum value returns)
// and an accepted alias ("auto" for "automatic"), or null.
struct spelling {
  const char* name;
  const char* alias = nullptr;
};

enum class kind {
  size,      // bytes (parse_size), in [min, max]; a power of two when power_of_two
  fraction,  // a real number in [lo, hi], an end excluded when lo_open / hi_open
  count,     // an unsigned integer in [min, max]
  word,      // one of `words`
};

struct variable {
  var id;
  const char* name;           // "PHEAP_PAGE_SIZE"
  kind type;
  const char* default_value;  // as README.md states it ("64 KiB", "1/4 of RAM")
  const char* meaning;        // one line
  // size and count: the accepted range.
  std::uint64_t min = 0;
  std::uint64_t max = UINT64_MAX;
  bool power_of_two = false;
  // fraction: the accepted range.
  double lo = 0, hi = 1;
  bool lo_open = false, hi_open = false;
  // word: the accepted choices, in the order of the enum they spell (the one place its
  // spellings are written: to_string(dirty_tracking) and the others read them from here).
  std::span<const spelling> words = {};
};

// Every library variable, in the order of `var`.
std::span<const variable> table() noexcept;
const variable& describe(var v) noexcept;

// Typed accessors: nullopt when the variable is unset or empty, else the checked value.
// Each one throws error(invalid_argument) naming the variable and the value when it is
// malformed or out of range. Asking for a variable of another kind is a programming error
// (asserted).
std::optional<std::uint64_t> size(var v);
std::optional<double> fraction(var v);
std::optional<unsigned> count(var v);
std::optional<std::string_view> word(var v);  // the choice's name (an alias resolved)
// The index of the choice in the row's `words` (the value of the enum it spells).
std::optional<unsigned> choice(var v);
// The name of choice `i` of a word variable (i < words.size(), asserted): static storage.
const char* name_of_choice(var v, unsigned i) noexcept;

// Throws error(invalid_argument, op "read <what>", "bad value '<value>': <why>").
[[noreturn]] void bad_env(const char* what, const std::string& value, const std::string& why);

// The one size syntax of pheap (environment and command-line tools): "65536", "64K", "64KiB",
// "64KB", "1M", "2G", "1T" (powers of 1024; suffix letters in either case). A malformed value
// (empty, negative, not a number, unknown suffix, more than 2^64-1 bytes) throws
// error(invalid_argument) naming `what` (the variable or option) and the value.
std::uint64_t parse_size(const char* what, const std::string& value);

}  // namespace pheap::env
