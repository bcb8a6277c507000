#include "support/cli.hpp"

#include <pheap/env.hpp>
#include <pheap/error.hpp>
#include <pheap/fault_guard.hpp>
#include <pheap/sparse_store.hpp>

#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>

namespace tool_support {

const char* const kExitCodes =
    "Exit status: 0 success; 1 failure (one message naming the datastore or file and the cause:\n"
    "I/O, a damaged page or file, a full disk, a locked datastore), or `pheap check` found problems\n"
    "(listed); 2 usage error (a bad option or value, a missing input, a job or graph mismatch, an\n"
    "input changed since its watermark); 3 malformed input (pheap-graph ingest: the edges before it\n"
    "are committed). The same codes for both tools, pheap and pheap-graph.";

const char* const kNumberRules =
    "Numbers: a SIZE is bytes with an optional K, M, G or T suffix in powers of 1024, also\n"
    "written KiB or KB (64MiB = 64M = 67108864 bytes), the rule of the PHEAP_* variables; a COUNT\n"
    "is a decimal integer with an optional k, M, G or T suffix in powers of 1000\n"
    "(1M edges = 1000000 edges).";

std::string version_line(const std::string& tool) {
  return tool + " " PHEAP_VERSION_STRING " (datastore format " +
         std::to_string(pheap::sparse_store::format_version) + ")";
}

std::uint64_t parse_count(const std::string& what, const std::string& value) {
  std::string digits = value;
  std::uint64_t mult = 1;
  if (!digits.empty()) {
    switch (digits.back()) {
      case 'k': case 'K': mult = 1000; break;
      case 'M': mult = 1000000; break;
      case 'G': mult = 1000000000; break;
      case 'T': mult = 1000000000000; break;
      default: break;
    }
    if (mult != 1) digits.pop_back();
  }
  std::uint64_t v = 0;
  const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (digits.empty() || r.ec != std::errc() || r.ptr != digits.data() + digits.size()) {
    throw CLI::ValidationError(what, "bad count '" + value +
                                         "' (expected a decimal integer with an optional k, M, G "
                                         "or T suffix, powers of 1000)");
  }
  if (v > ~0ull / mult) throw CLI::ValidationError(what, "count '" + value + "' is too large");
  return v * mult;
}

std::uint64_t parse_size(const std::string& what, const std::string& value) {
  try {
    return pheap::env::parse_size(what.c_str(), value);
  } catch (const pheap::error&) {
    throw CLI::ValidationError(what, "bad size '" + value +
                                         "' (expected bytes with an optional K, M, G or T "
                                         "suffix, powers of 1024: 64MiB, 1G)");
  }
}

namespace {
using number_parser = std::uint64_t (*)(const std::string&, const std::string&);

CLI::Option* add_number_option(CLI::App& app, const std::string& name, std::uint64_t& out,
                               const std::string& help, number_parser parse, const char* type) {
  return app
      .add_option_function<std::string>(
          name, [&out, name, parse](const std::string& v) { out = parse(name, v); }, help)
      ->type_name(type);
}
}  // namespace

CLI::Option* add_size_option(CLI::App& app, const std::string& name, std::uint64_t& out,
                             const std::string& help) {
  return add_number_option(app, name, out, help, parse_size, "SIZE");
}

CLI::Option* add_count_option(CLI::App& app, const std::string& name, std::uint64_t& out,
                              const std::string& help) {
  return add_number_option(app, name, out, help, parse_count, "COUNT");
}

namespace {
// "pheap ls" for the deepest subcommand the parser reached.
std::string command_path(const CLI::App& app) {
  std::string p = app.get_name();
  const CLI::App* cur = &app;
  for (;;) {
    const auto subs = cur->get_subcommands();
    if (subs.empty()) return p;
    cur = subs.front();
    p += " " + cur->get_name();
  }
}
}  // namespace

namespace {
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
      return app.exit(e);  // --help, --version: printed to stdout, exit 0
    }
    const std::string where = command_path(app);
    std::string what = e.what();
    // CLI11 capitalises its messages; here they follow "<tool> <command>: " mid-sentence.
    if (what.size() > 1 && std::isupper(static_cast<unsigned char>(what[0])) &&
        !std::isupper(static_cast<unsigned char>(what[1]))) {
      what[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(what[0])));
    }
    auto commands = [&app] {
      std::string l = " (one of:";
      for (const CLI::App* s : app.get_subcommands({})) l += " " + s->get_name();
      return l + ")";
    };
    if (app.get_subcommands().empty() && argc > 1 && argv[1][0] != '-') {
      what = "unknown command '" + std::string(argv[1]) + "'" + commands();
    } else if (app.get_subcommands().empty() && what.find("subcommand is required") != std::string::npos) {
      what = "a command is required" + commands();  // the tools call them commands
    }
    std::fprintf(stderr, "%s: %s (see %s --help)\n", where.c_str(), what.c_str(), where.c_str());
    return exit_usage;
  }
}
}  // namespace


void set_up(CLI::App& app, const std::string& tool, const std::string& notes) {
  app.set_version_flag("--version", version_line(tool), "print the version and exit");
  app.set_help_flag("-h,--help", "print this help and exit");
  app.require_subcommand(1, 1);
  app.footer(std::string(kExitCodes) + "\n" + (notes.empty() ? "" : notes + "\n") + kNumberRules);
}

failure describe_failure(const std::exception& e, const std::string& locked_hint) {
  const auto* pe = dynamic_cast<const pheap::error*>(&e);
  if (pe == nullptr) return {exit_failure, e.what()};
  std::string m = e.what();
  if (pe->code() == pheap::errc::locked) {
    m += " (" + locked_hint + ")";
  } else if (pe->code() == pheap::errc::corrupt && pe->op() != "open") {
    m += " (`pheap check` lists every damaged page)";
  }
  return {pe->code() == pheap::errc::invalid_argument ? exit_usage : exit_failure, m};
}

namespace {
int run_command(const std::string& tool, const std::string& command,
                const std::function<int()>& body,
                const std::function<failure(const std::exception&)>& describe) {
  failure f{1, ""};
  try {
    return pheap::guard_faults(body);
  } catch (const std::exception& e) {
    f = describe(e);
  }
  std::fprintf(stderr, "%s %s: %s\n", tool.c_str(), command.c_str(), f.message.c_str());
  leave(f.code);
}
}  // namespace

void leave(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(code);
}

std::string human_bytes(std::uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

std::string human_count(double n) {
  char b[32];
  if (n >= 1e9) std::snprintf(b, sizeof b, "%.2fG", n / 1e9);
  else if (n >= 1e6) std::snprintf(b, sizeof b, "%.2fM", n / 1e6);
  else if (n >= 1e3) std::snprintf(b, sizeof b, "%.1fk", n / 1e3);
  else std::snprintf(b, sizeof b, "%.0f", n);
  return b;
}

int parse_and_run(CLI::App& app, int argc, char** argv, const std::function<int()>& action,
                  const std::function<failure(const std::exception&)>& describe) {
  if (auto rc = parse_command_line(app, argc, argv)) return *rc;
  return run_command(app.get_name(), app.get_subcommands().front()->get_name(), action, describe);
}

}  // namespace tool_support

namespace tool_support {

CLI::Option* add_huge_pages_option(CLI::App& app, std::string& out) {
  return app
      .add_option("--huge-pages", out,
                  "off, always or auto: map pages of 2 MiB or more with 2 MiB page-table entries, "
                  "always at every fill, auto by promoting the pages that stay in core "
                  "(default off, or PHEAP_HUGE_PAGES), read-only opens too; smaller pages stay at 4 KiB")
      ->check(CLI::IsMember({"off", "always", "auto"}));
}

void apply_huge_pages(const std::string& given, pheap::pager_options& o) {
  if (given == "always") o.huge_pages = pheap::huge_pages_mode::always;
  if (given == "off") o.huge_pages = pheap::huge_pages_mode::off;
  if (given == "auto") o.huge_pages = pheap::huge_pages_mode::automatic;
}

}  // namespace tool_support
