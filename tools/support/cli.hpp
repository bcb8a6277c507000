// tools/support/cli.hpp — what the command-line tools (pheap, pheap-graph) share about their
// command lines: CLI11 set-up, the two number rules, exit codes, error reporting.
//
// Number rules (stated in every --help footer, kNumberRules):
//   sizes in bytes   pheap::env::parse_size, the parser of the PHEAP_* variables: K, M, G, T
//                    are powers of 1024 and may be written KiB or KB ("64MiB" = 67108864);
//   counts           decimal integers with an optional k, M, G or T suffix meaning powers of
//                    1000 ("1M" edges = 1000000 edges), parse_count below.
// Exit codes: one table for both tools (kExitCodes, the first lines of every --help footer;
// tools/README.md): the same failure exits with the same code from either.
//
// Caveat: after a command fails, the tools leave with leave() (std::_Exit after flushing
// stdio), not by returning from main. A damaged page read inside pheap::guard_faults skipped the
// destructors of the frames it unwound (pheap/fault_guard.hpp), so running the remaining ones
// could meet state those frames left behind; a read-only open writes nothing on close, and a
// failed ingestion must not flush (its datastore keeps its last watermark).
#pragma once

#include <CLI/CLI.hpp>
#include <pheap/pager_options.hpp>

#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <string>

namespace tool_support {

inline constexpr int exit_ok = 0;
inline constexpr int exit_failure = 1;    // the command failed (one message: what and why), or
                                          // `pheap check` found problems (listed)
inline constexpr int exit_usage = 2;      // a bad option or value, a missing input, a job or
                                          // graph mismatch, an input changed since its watermark
inline constexpr int exit_bad_input = 3;  // pheap-graph ingest: a malformed input

// The footer of every --help: the exit codes above, then the two number rules.
extern const char* const kExitCodes;
extern const char* const kNumberRules;

// "pheap 0.1.0 (datastore format 2)": the library version from CMake.
std::string version_line(const std::string& tool);

// A count: decimal digits with an optional k/K, M, G or T suffix (powers of 1000). Throws
// CLI::ValidationError naming `what` and the value.
std::uint64_t parse_count(const std::string& what, const std::string& value);
// A size in bytes with the rules of pheap::env::parse_size. Throws CLI::ValidationError.
std::uint64_t parse_size(const std::string& what, const std::string& value);

// Options whose value follows the rules above; `out` is set when the option is given.
CLI::Option* add_size_option(CLI::App& app, const std::string& name, std::uint64_t& out,
                             const std::string& help);
CLI::Option* add_count_option(CLI::App& app, const std::string& name, std::uint64_t& out,
                              const std::string& help);
// --huge-pages off|always|auto (pheap::pager_options::huge_pages); `out` stays "" when not given.
CLI::Option* add_huge_pages_option(CLI::App& app, std::string& out);
// Sets o.huge_pages from what add_huge_pages_option read ("" leaves it as it is).
void apply_huge_pages(const std::string& given, pheap::pager_options& o);

// The top level of a tool: --version, -h/--help, exactly one command, and a footer of
// kExitCodes, `notes` (the tool's own, may be empty) and kNumberRules.
void set_up(CLI::App& app, const std::string& tool, const std::string& notes);

// What a failed command prints ("<tool> <command>: <message>") and its exit code.
struct failure {
  int code;
  std::string message;
};

// A failure as both tools report it: a pheap::error of a bad argument is exit_usage, anything
// else exit_failure; a locked datastore gets `locked_hint`, a damaged page met while reading
// (not a datastore that cannot be opened: `pheap check` could not list more) a pointer to
// `pheap check`.
failure describe_failure(const std::exception& e, const std::string& locked_hint);

// The whole of a tool's main after its commands are defined: parses argv (the callbacks of the
// chosen command set `action`), then runs `action` inside pheap::guard_faults. Returns the exit
// code: 0 after --help or --version (printed to stdout); exit_usage after a usage error, printed
// to stderr as one line "<tool> <command>: <what is wrong> (see <tool> <command> --help)"; else
// the action's. When the action throws, prints "<tool> <command>: " and what `describe` makes of
// the exception, and leaves (see leave()) with its code.
int parse_and_run(CLI::App& app, int argc, char** argv, const std::function<int()>& action,
                  const std::function<failure(const std::exception&)>& describe);

// Flushes stdout and stderr and ends the process with `code` without running destructors
// (see the caveat above).
[[noreturn]] void leave(int code);

// "145.2 MiB" (powers of 1024), "1.23M" (powers of 1000).
std::string human_bytes(std::uint64_t bytes);
std::string human_count(double n);

}  // namespace tool_support
