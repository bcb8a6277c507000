// pheap — command-line tool for pheap datastores: ls, info, check, snapshot, rm, upgrade.
//
// Every command runs inside pheap::guard_faults: a damaged page met while reading the heap is
// an error naming the segment file and the page (exit 1), never SIGBUS. Every command opens
// read-only (rm and upgrade take the exclusive lock): beside a writer (store format 4) ls,
// info, check and snapshot read its last watermark; where a read-only open is refused (format
// 3 under a writer: "locked") they fail at once with a message naming the path and the cause —
// except `info`, which then reports the last watermark from the superblock (manager::peek).
// --help on the tool and on each command lists every option; the JSON schemas of --json are in
// tools/README.md.
#include <pheap/pheap.hpp>
#include <pheap/sparse_store.hpp>

#include <sys/ioctl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "support/cli.hpp"
#include "support/progress.hpp"

namespace {

using nlohmann::json;
using tool_support::human_bytes;
using tool_support::progress;

// Exit codes: tools/support/cli.hpp (one table for both tools).
constexpr int exit_problems = tool_support::exit_failure;  // check: the datastore is damaged

const char* const kNotes =
    "Every command opens read-only; beside a writer (store format 4) the commands read its last\n"
    "watermark, and info lists the processes reading the datastore.";

struct common_args {
  std::string path;
  static constexpr std::uint64_t kNotGiven = ~std::uint64_t{0};
  std::uint64_t buffer = kNotGiven;  // --buffer-size (0: the pager's automatic buffer)
  std::string huge_pages;            // --huge-pages ("": not given)
  bool json = false;
  bool quiet = false;
};

// The tool's default buffer (a tool needs little memory), then the PHEAP_* variables, then
// the command line: each wins over the one before.
pheap::options read_options(const common_args& a) {
  pheap::options defaults;
  defaults.pager.buffer_size = 64ull << 20;
  pheap::options o = pheap::options::from_env(defaults);
  if (a.buffer != common_args::kNotGiven) o.pager.buffer_size = a.buffer;
  tool_support::apply_huge_pages(a.huge_pages, o.pager);
  return o;
}

std::string dump(const json& j) {
  return j.dump(2, ' ', false, json::error_handler_t::replace);
}

// ---- ls -------------------------------------------------------------------------------------

struct listed {
  std::string kind, name, type, description;
  std::uint64_t length = 0, bytes = 0, offset = 0;
};

std::vector<listed> list_objects(const pheap::manager& m) {
  std::vector<listed> v;
  auto add = [&](const pheap::object_info& i) {
    v.push_back({pheap::to_string(i.kind), std::string(i.name), std::string(i.type_name),
                 std::string(i.description), i.length, i.length * i.type_size, i.offset});
  };
  for (auto it = m.named_begin(); it != m.named_end(); ++it) add(*it);
  for (auto it = m.unique_begin(); it != m.unique_end(); ++it) add(*it);
  for (auto it = m.anonymous_begin(); it != m.anonymous_end(); ++it) add(*it);
  return v;
}

// Columns KIND LENGTH BYTES NAME TYPE; NAME is as wide as the longest name up to 32 columns
// (a longer one puts its TYPE on the next line), TYPE takes the rest of the terminal's width
// (clipped with "..." unless `wide`; never clipped when stdout is not a terminal).
void print_table(const std::vector<listed>& objs, bool wide) {
  std::size_t wl = 6, wb = 5, wn = 4;
  for (const auto& o : objs) {
    wl = std::max(wl, std::to_string(o.length).size());
    wb = std::max(wb, std::to_string(o.bytes).size());
    wn = std::max(wn, std::min<std::size_t>(o.name.size(), 32));
  }
  int width = 0;
  if (!wide && ::isatty(STDOUT_FILENO)) {
    winsize ws{};
    width = ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 ? ws.ws_col : 80;
  }
  const std::size_t type_col = 10 + wl + 2 + wb + 2 + wn + 2;
  auto clip = [&](const std::string& s, std::size_t col) {
    if (width <= 0 || col + s.size() <= static_cast<std::size_t>(width)) return s;
    const std::size_t room = static_cast<std::size_t>(width) > col + 4 ? width - col - 3 : 1;
    return s.substr(0, room) + "...";
  };
  std::printf("%-9s %*s  %*s  %-*s  %s\n", "KIND", static_cast<int>(wl), "LENGTH",
              static_cast<int>(wb), "BYTES", static_cast<int>(wn), "NAME", "TYPE");
  for (const auto& o : objs) {
    const std::string name = o.name.empty() ? "-" : o.name;
    std::printf("%-9s %*llu  %*llu  %-*s  ", o.kind.c_str(), static_cast<int>(wl),
                static_cast<unsigned long long>(o.length), static_cast<int>(wb),
                static_cast<unsigned long long>(o.bytes), static_cast<int>(wn), name.c_str());
    if (name.size() > wn) std::printf("\n%*s", static_cast<int>(type_col), "");
    std::printf("%s\n", clip(o.type, type_col).c_str());
    if (!o.description.empty()) {
      std::printf("%*sdescription: %s\n", 10, "", clip(o.description, 23).c_str());
    }
  }
}

int cmd_ls(const common_args& a, bool wide) {
  const pheap::manager m(pheap::open_read_only, a.path, read_options(a));
  const auto objs = list_objects(m);
  const pheap::manager_stats s = m.stats();
  if (a.json) {
    json j{{"datastore", a.path}, {"epoch", s.epoch}, {"objects", json::array()},
           {"counts", {{"named", s.named_objects}, {"unique", s.unique_objects},
                       {"anonymous", s.anonymous_objects}}},
           {"heap_allocated_bytes", s.small_bytes + s.large_bytes}};
    for (const auto& o : objs) {
      j["objects"].push_back({{"kind", o.kind}, {"name", o.name}, {"type", o.type},
                              {"length", o.length}, {"bytes", o.bytes}, {"offset", o.offset},
                              {"description", o.description}});
    }
    std::printf("%s\n", dump(j).c_str());
    return 0;
  }
  print_table(objs, wide);
  const std::uint64_t unlisted = s.anonymous_objects - std::min<std::uint64_t>(
      s.anonymous_objects, static_cast<std::uint64_t>(std::count_if(
          objs.begin(), objs.end(), [](const listed& o) { return o.kind == "anonymous"; })));
  std::printf("%llu named, %llu unique, %llu anonymous objects. BYTES is sizeof(type) x LENGTH:\n"
              "the object itself, not the memory it owns; all allocations of the heap take %s.\n",
              static_cast<unsigned long long>(s.named_objects),
              static_cast<unsigned long long>(s.unique_objects),
              static_cast<unsigned long long>(s.anonymous_objects),
              human_bytes(s.small_bytes + s.large_bytes).c_str());
  if (unlisted > 0) {
    std::printf("%llu anonymous object(s) were made by pheap 0.1.0 (heap layout 1), which did not\n"
                "index them: they are counted, not listed.\n",
                static_cast<unsigned long long>(unlisted));
  }
  return 0;
}

// ---- info -----------------------------------------------------------------------------------



// The fields both sources of info know (an open, or the superblock while a writer runs).
json watermark_json(const std::string& path, const pheap::watermark_info& w) {
  return {{"datastore", path},         {"uuid", w.uuid},
          {"store_format", w.store_format}, {"writer_version", pheap::version_string(w.writer_version)},
          {"epoch", w.epoch},          {"description", w.description},
          {"capacity", w.capacity},    {"page_size", w.page_size},
          {"chunk_size", w.chunk_size}, {"created", pheap::utc_time_string(w.created_ns)},
          {"disk_bytes", w.disk_bytes}};
}

void print_watermark(const json& j) {
  std::printf("path:            %s\n", j["datastore"].get<std::string>().c_str());
  std::printf("uuid:            %s\n", j["uuid"].get<std::string>().c_str());
  std::printf("store format:    %u\n", j["store_format"].get<unsigned>());
  std::printf("writer version:  %s\n", j["writer_version"].get<std::string>().c_str());
  std::printf("created:         %s\n", j["created"].get<std::string>().c_str());
  std::printf("epoch:           %llu\n", j["epoch"].get<unsigned long long>());
  std::printf("description:     %s\n", j["description"].get<std::string>().c_str());
  std::printf("capacity:        %s (%llu bytes)\n", human_bytes(j["capacity"].get<std::uint64_t>()).c_str(),
              j["capacity"].get<unsigned long long>());
  std::printf("page size:       %s\n", human_bytes(j["page_size"].get<std::uint64_t>()).c_str());
  std::printf("chunk size:      %s\n", human_bytes(j["chunk_size"].get<std::uint64_t>()).c_str());
}

std::unique_ptr<pheap::sparse_store> open_store(const std::string& path) {
  pheap::store_options o;
  o.read_only = true;
  return pheap::sparse_store::open(path, o);
}

// The processes reading the datastore through its reader table now (this one included while
// it has the datastore open: "this"), oldest watermark first.
json readers_json(const std::string& path) {
  std::vector<pheap::reader_info> rs = pheap::sparse_store::readers(path);
  std::sort(rs.begin(), rs.end(), [](const auto& x, const auto& y) { return x.epoch < y.epoch; });
  json a = json::array();
  for (const pheap::reader_info& r : rs) {
    a.push_back({{"pid", r.pid}, {"epoch", r.epoch}, {"since", pheap::utc_time_string(r.since_unix_ns)},
                 {"since_ns", r.since_unix_ns}, {"pinned_bytes", r.pinned_bytes}, {"expired", r.expired},
                 {"this", r.pid == static_cast<std::uint32_t>(::getpid())}});
  }
  return a;
}

void print_readers(const json& j) {
  const json& rs = j["readers"];
  std::printf("readers:         %zu", rs.size());
  if (j.contains("pin_limit")) {
    std::printf(" (%s kept for them by the writer; it keeps at most %s, then releases the oldest)",
                human_bytes(j["pinned_bytes"].get<std::uint64_t>()).c_str(),
                human_bytes(j["pin_limit"].get<std::uint64_t>()).c_str());
  }
  std::printf("\n");
  for (const json& r : rs) {
    std::printf("  pid %-8u epoch %-8llu since %s, %s pinned%s%s\n", r["pid"].get<unsigned>(),
                r["epoch"].get<unsigned long long>(), r["since"].get<std::string>().c_str(),
                human_bytes(r["pinned_bytes"].get<std::uint64_t>()).c_str(),
                r["expired"].get<bool>() ? ", EXPIRED (released by the writer: its next read fails)" : "",
                r["this"].get<bool>() ? " (this pheap info)" : "");
  }
}

// "huge pages:" of info's text form: off (and whether the page size would allow them), why
// not when asked for and not in force, else this open's fills and what is mapped with 2 MiB
// entries now.
void print_huge_pages(const json& j) {
  const auto& h = j["huge_pages"];
  constexpr std::uint64_t kPmd = std::uint64_t{2} << 20;
  const std::uint64_t ps = j["page_size"].get<std::uint64_t>();
  if (h["asked"] == "off") {
    std::printf("huge pages:      off%s\n", ps % kPmd == 0 ? " (--huge-pages always maps these pages with 2 MiB entries)"
                                                          : " (they need a page size of 2 MiB or a multiple)");
  } else if (!h["in_force"].get<bool>()) {
    std::printf("huge pages:      %s, not in force: %s\n", h["asked"].get<std::string>().c_str(),
                h["why"].get<std::string>().c_str());
  } else if (h["asked"] == "auto") {
    std::printf("huge pages:      auto: fills at 4 KiB, %llu promoted to 2 MiB pages so far; %s mapped with 2 MiB "
                "entries now\n",
                h["promotions"].get<unsigned long long>(), human_bytes(h["mapped_bytes"].get<std::uint64_t>()).c_str());
  } else {
    std::printf("huge pages:      %s: %llu fills with 2 MiB entries, %llu at 4 KiB (%llu split by the kernel); "
                "%s mapped with 2 MiB entries now\n",
                h["asked"].get<std::string>().c_str(), h["fills"].get<unsigned long long>(),
                h["fallback_fills"].get<unsigned long long>(), h["split"].get<unsigned long long>(),
                human_bytes(h["mapped_bytes"].get<std::uint64_t>()).c_str());
  }
}

int cmd_info(const common_args& a) {
  json j;
  try {
    const pheap::options o = read_options(a);
    const pheap::manager m(pheap::open_read_only, a.path, o);
    // The open read the superblock, the map directory and the heap's header only: every other
    // file is checked once, as its first read would, so a missing one is not shown as sound.
    open_store(a.path)->check_files();
    const pheap::manager_stats s = m.stats();
    j = watermark_json(a.path, m.watermark());
    j["source"] = "open";
    j["live_bytes"] = s.store.live_bytes;
    j["chunks"] = {{"in_use", s.chunks_in_use}, {"total", s.num_chunks}};
    j["allocated"] = {{"small_bytes", s.small_bytes}, {"large_bytes", s.large_bytes}};
    j["objects"] = {{"named", s.named_objects}, {"unique", s.unique_objects},
                    {"anonymous", s.anonymous_objects}};
    if (s.store.pin_limit != 0) {  // read through the reader table (format 4)
      j["pin_limit"] = s.store.pin_limit;
      j["pinned_bytes"] = s.store.pinned_bytes;
      j["readers_expired"] = s.store.readers_expired;
    }
    j["readers"] = readers_json(a.path);
    // What this open's pager did with huge pages (--huge-pages, PHEAP_HUGE_PAGES): the pages
    // info read (the heap's header and directory) and how the page tables map them now.
    const pheap::pager_stats& p = s.pager;
    j["huge_pages"] = {{"asked", pheap::to_string(o.pager.huge_pages)},
                       {"in_force", p.huge_pages},
                       {"why", p.huge_pages_why},
                       {"fills", p.huge_fills},
                       {"fallback_fills", p.huge_fallback_fills},
                       {"split", p.huge_fallback_split},
                       {"promotions", p.huge_promotions},
                       {"mapped_bytes", p.huge_mapped_bytes}};
  } catch (const pheap::error& e) {
    if (e.code() != pheap::errc::locked) throw;
    j = watermark_json(a.path, pheap::manager::peek(a.path));
    j["source"] = "superblock";
    j["readers"] = readers_json(a.path);
  }
  if (a.json) {
    std::printf("%s\n", dump(j).c_str());
    return 0;
  }
  print_watermark(j);
  if (j["source"] == "superblock") {
    std::printf("in use:          (another process has the datastore open for writing and this\n"
                "                 store format cannot be read beside it: this is its last\n"
                "                 watermark, read from the superblock; usage and objects need an\n"
                "                 open once the writer closes, or `pheap upgrade PATH` then)\n");
  } else {
    const auto& c = j["chunks"];
    std::printf("chunks in use:   %llu of %llu (%s)\n", c["in_use"].get<unsigned long long>(),
                c["total"].get<unsigned long long>(),
                human_bytes(c["in_use"].get<std::uint64_t>() * j["chunk_size"].get<std::uint64_t>()).c_str());
    std::printf("allocated:       %s small, %s large\n", human_bytes(j["allocated"]["small_bytes"].get<std::uint64_t>()).c_str(),
                human_bytes(j["allocated"]["large_bytes"].get<std::uint64_t>()).c_str());
    const auto& o = j["objects"];
    std::printf("objects:         %llu named, %llu unique, %llu anonymous\n",
                o["named"].get<unsigned long long>(), o["unique"].get<unsigned long long>(),
                o["anonymous"].get<unsigned long long>());
    print_huge_pages(j);
  }
  std::printf("on disk:         %s\n", human_bytes(j["disk_bytes"].get<std::uint64_t>()).c_str());
  if (j.contains("live_bytes")) {
    std::printf("live data:       %s (pages with data)\n",
                human_bytes(j["live_bytes"].get<std::uint64_t>()).c_str());
  }
  print_readers(j);
  return 0;
}

// ---- check and snapshot: the scrub -----------------------------------------------------------

struct damaged_page {
  std::uint64_t page;
  std::string file;
  std::string message;  // the store's error
  std::string problem;  // the same in the user's terms: "<file>: <cause>"
};

// "<file>: <cause>" of a store error "pheap: <op> <file>: <cause>" (the operation is the
// library's business, the file and the cause the user's).
std::string in_user_terms(const pheap::error& e) {
  const std::string m = e.what();
  const std::string head = "pheap: " + e.op() + (e.path().empty() ? "" : " " + e.path()) + ": ";
  if (m.rfind(head, 0) != 0) return m;
  return (e.path().empty() ? std::string() : e.path() + ": ") + m.substr(head.size());
}

struct scrub_result {
  std::uint64_t pages_read = 0;
  std::vector<damaged_page> damaged;
};

// Reads every page of the open store that may hold data (in batches), so each is verified
// against its checksum in the page map (and every map block on the way); a batch that fails is read again page by page to
// name every damaged one. Works on the store, before the heap is mapped.
scrub_result scrub(pheap::sparse_store& s, progress& pr) {
  const std::uint32_t ps = s.page_size();
  const std::uint64_t n = s.capacity() / ps;
  std::uint64_t with_data = 0;
  for (std::uint64_t p = 0; p < n; ++p) with_data += s.may_have_data(p) ? 1 : 0;
  pr.set_total(with_data * ps);
  // 8 MiB per batch: consecutive pages are one request each (at most 1 MiB), several in
  // flight; page-aligned, so O_DIRECT reads land in it without a bounce copy.
  const std::size_t batch_pages = std::max<std::size_t>(1, (std::size_t{8} << 20) / ps);
  const std::unique_ptr<std::byte, decltype(&std::free)> mem(
      static_cast<std::byte*>(std::aligned_alloc(4096, batch_pages * ps)), &std::free);
  if (!mem) throw std::bad_alloc();
  std::byte* const buf = mem.get();
  std::vector<pheap::page_read> batch;
  scrub_result r;
  auto read_batch = [&] {
    if (batch.empty()) return;
    try {
      s.read_pages(batch);
    } catch (const pheap::error&) {
      for (const auto& one : batch) {
        try {
          s.read_pages(std::span<const pheap::page_read>(&one, 1));
        } catch (const pheap::error& e) {
          r.damaged.push_back({one.page, e.path(), e.what(), in_user_terms(e)});
        }
      }
    }
    r.pages_read += batch.size();
    batch.clear();
    pr.update(r.pages_read * ps);
  };
  for (std::uint64_t p = 0; p < n; ++p) {
    if (!s.may_have_data(p)) continue;
    batch.push_back({p, buf + batch.size() * ps});
    if (batch.size() == batch_pages) read_batch();
  }
  read_batch();
  pr.finish(std::to_string(r.pages_read) + " pages verified");
  return r;
}

// One line per problem: pages that fail for the same cause (a missing or truncated file, an
// unreadable map block) are one problem, with their count and range. "The same cause" is the
// same file and the same message up to its numbers (a page or an epoch in the store's words):
// the first page's message stands for the group.
std::string cause_key(const damaged_page& x) {
  std::string k = x.file + '\n';
  bool in_number = false;
  for (char c : x.problem) {
    const bool digit = c >= '0' && c <= '9';
    if (!digit) k += c;
    else if (!in_number) k += '#';
    in_number = digit;
  }
  return k;
}

std::vector<std::string> group_problems(const std::vector<damaged_page>& d) {
  struct group {
    std::string first_problem;
    std::uint64_t first, last, pages;
  };
  std::vector<std::string> order;
  std::map<std::string, group> by_cause;
  for (const auto& x : d) {
    const std::string key = cause_key(x);
    auto [it, fresh] = by_cause.try_emplace(key, group{x.problem, x.page, x.page, 0});
    if (fresh) order.push_back(key);
    it->second.first = std::min(it->second.first, x.page);
    it->second.last = std::max(it->second.last, x.page);
    ++it->second.pages;
  }
  std::vector<std::string> out;
  for (const auto& k : order) {
    const group& g = by_cause.at(k);
    out.push_back(g.pages == 1 ? g.first_problem
                               : g.first_problem + "; the same for " + std::to_string(g.pages - 1) +
                                     " more page(s) with data (" + std::to_string(g.pages) +
                                     " in all, pages " + std::to_string(g.first) + "-" +
                                     std::to_string(g.last) + ")");
  }
  return out;
}

json damaged_json(const std::vector<damaged_page>& d) {
  json a = json::array();
  for (const auto& x : d) a.push_back({{"page", x.page}, {"file", x.file}, {"error", x.message}});
  return a;
}

int cmd_check(const common_args& a) {
  // Opening verifies the superblocks and the page-map directory; the scrub verifies every map
  // block with data and every page with data; then the heap root record and header; then every
  // allocator and directory invariant.
  // Beside a writer (format 4) the scrub reads the watermark its store registered and the heap
  // the one its manager opens: the same one unless the writer flushed in between, which the
  // report then says (pages_epoch).
  progress pr(progress::choose(a.quiet), "check", progress::unit::bytes);
  scrub_result sr;
  std::uint64_t pages_epoch = 0;
  {
    const auto store = open_store(a.path);
    pages_epoch = store->epoch();
    sr = scrub(*store, pr);
  }
  json j{{"datastore", a.path}, {"pages_verified", sr.pages_read}, {"pages_epoch", pages_epoch},
         {"damaged_pages", damaged_json(sr.damaged)}, {"problems", json::array()}};
  if (!sr.damaged.empty()) {
    j["sound"] = false;
    j["heap_checked"] = false;
    if (a.json) {
      std::printf("%s\n", dump(j).c_str());
      return exit_problems;
    }
    const auto problems = group_problems(sr.damaged);
    for (std::size_t i = 0; i < std::min<std::size_t>(problems.size(), 50); ++i) {
      std::printf("problem: %s\n", problems[i].c_str());
    }
    if (problems.size() > 50) std::printf("problem: ... and %zu more\n", problems.size() - 50);
    std::printf("%s: %zu problem(s), %zu damaged page(s) of %llu pages with data; heap invariants "
                "not checked (the heap would read damaged pages)\n",
                a.path.c_str(), problems.size(), sr.damaged.size(),
                static_cast<unsigned long long>(sr.pages_read));
    return exit_problems;
  }
  const pheap::manager m(pheap::open_read_only, a.path, read_options(a));
  const auto problems = m.check();
  j["sound"] = problems.empty();
  j["heap_checked"] = true;
  j["epoch"] = m.epoch();
  j["named_objects"] = m.get_num_named_objects();
  for (const auto& p : problems) j["problems"].push_back(p);
  if (a.json) {
    std::printf("%s\n", dump(j).c_str());
    return problems.empty() ? 0 : exit_problems;
  }
  for (const auto& p : problems) std::printf("problem: %s\n", p.c_str());
  if (!problems.empty()) {
    std::printf("%s: %zu problem(s) at epoch %llu\n", a.path.c_str(), problems.size(),
                static_cast<unsigned long long>(m.epoch()));
    return exit_problems;
  }
  std::printf("%s: sound (epoch %llu, %zu named objects, %llu pages verified", a.path.c_str(),
              static_cast<unsigned long long>(m.epoch()), m.get_num_named_objects(),
              static_cast<unsigned long long>(sr.pages_read));
  if (pages_epoch != m.epoch()) {
    std::printf(" at epoch %llu: a writer flushed between the two", static_cast<unsigned long long>(pages_epoch));
  }
  std::printf(")\n");
  return 0;
}

// Verifies every page of SRC's last watermark, then copies it; refuses (nothing written) when a
// page fails its checksum. The copy is made from the store that was scrubbed, open from the
// scrub to the end of the copy: of the watermark that was verified, also while a writer keeps
// flushing beside it (format 4: the store reads the watermark it registered).
int cmd_snapshot(const std::string& src, const std::string& dst, bool quiet) {
  progress pr(progress::choose(quiet), "verify", progress::unit::bytes);
  const auto store = open_store(src);
  const scrub_result sr = scrub(*store, pr);
  if (!sr.damaged.empty()) {
    const auto problems = group_problems(sr.damaged);
    for (std::size_t i = 0; i < std::min<std::size_t>(problems.size(), 10); ++i) {
      std::fprintf(stderr, "pheap snapshot: problem: %s\n", problems[i].c_str());
    }
    throw pheap::error(pheap::errc::corrupt, src, "snapshot",
                       std::to_string(sr.damaged.size()) +
                           " page(s) fail their checksum: refusing to copy damaged data, nothing "
                           "was written to " + dst);
  }
  if (!quiet) std::fprintf(stderr, "copying %s to %s ...\n", src.c_str(), dst.c_str());
  (void)pheap::manager::peek(src);  // a heap's datastore (its root record decodes), as manager::copy asks
  store->snapshot(dst);
  std::printf("snapshot of %s (epoch %llu) written to %s; its %llu pages with data were verified "
              "against their checksums before the copy\n",
              src.c_str(), static_cast<unsigned long long>(store->epoch()), dst.c_str(),
              static_cast<unsigned long long>(sr.pages_read));
  return 0;
}

// Converts a store-format-2 datastore into the new datastore DST of this build's format, page
// for page (SRC is only read), so any heap the library reads stays readable; without DST,
// converts the format-3 datastore SRC in place (sparse_store::upgrade_in_place: the
// superblock's version only, under the exclusive lock).
int cmd_upgrade(const std::string& src, const std::string& dst, bool quiet) {
  if (dst.empty()) {
    if (pheap::sparse_store::upgrade_in_place(src)) {
      std::printf("%s upgraded in place from store format %u to %u\n", src.c_str(),
                  pheap::sparse_store::format3_version, pheap::sparse_store::format_version);
    } else {
      std::printf("%s is store format %u already: nothing to do\n", src.c_str(), pheap::sparse_store::format_version);
    }
    return 0;
  }
  if (!quiet) std::fprintf(stderr, "upgrading %s to %s ...\n", src.c_str(), dst.c_str());
  pheap::sparse_store::upgrade(src, dst);
  std::printf("%s (store format 2) upgraded to %s (store format %u)\n", src.c_str(), dst.c_str(),
              pheap::sparse_store::format_version);
  return 0;
}

// ---- the command line --------------------------------------------------------------------------

tool_support::failure describe(const std::exception& e) {
  return tool_support::describe_failure(
      e, "another process has it open for writing; close it first — `pheap info` shows its last "
         "watermark meanwhile");
}

// The options of every command, and what the chosen one runs.
struct command_line {
  common_args a;
  bool wide = false;
  std::string dst;
  std::function<int()> action;
};

void add_path(CLI::App& sub, common_args& a) {
  sub.add_option("PATH", a.path, "the datastore directory")->required();
}
// --json and --buffer-size: the commands that read the heap.
void add_read_options(CLI::App& sub, common_args& a) {
  sub.add_flag("--json", a.json, "print one JSON document (schema: tools/README.md)");
  tool_support::add_size_option(sub, "--buffer-size", a.buffer,
                                "memory for the heap's pages while reading (default 64MiB, or PHEAP_BUFFER_SIZE)");
  tool_support::add_huge_pages_option(sub, a.huge_pages);
}

void define_ls(CLI::App& app, command_line& c) {
  auto* ls = app.add_subcommand("ls", "list the named and unique objects (kind, length, bytes, "
                                      "name, type, description), then the anonymous ones");
  add_path(*ls, c.a);
  add_read_options(*ls, c.a);
  ls->add_flag("--wide", c.wide, "never clip long type names to the terminal's width");
  ls->callback([&c] { c.action = [&c] { return cmd_ls(c.a, c.wide); }; });
}

void define_info(CLI::App& app, command_line& c) {
  auto* info = app.add_subcommand("info", "versions, uuid, epoch, geometry, usage and disk space; "
                                          "while a writer runs, its last watermark");
  add_path(*info, c.a);
  add_read_options(*info, c.a);
  info->callback([&c] { c.action = [&c] { return cmd_info(c.a); }; });
}

void define_check(CLI::App& app, command_line& c) {
  auto* check = app.add_subcommand(
      "check", "verify the store, every page with data against its checksum, then the heap's "
               "allocator and directory invariants (exit 1 if damaged)");
  add_path(*check, c.a);
  add_read_options(*check, c.a);
  check->add_flag("-q,--quiet", c.a.quiet, "no progress on stderr");
  check->callback([&c] { c.action = [&c] { return cmd_check(c.a); }; });
}

void define_snapshot(CLI::App& app, command_line& c) {
  auto* snap = app.add_subcommand(
      "snapshot", "copy the last watermark of SRC into the new datastore DST, after verifying "
                  "every page against its checksum (damage: refused, nothing written)");
  snap->add_option("SRC", c.a.path, "the datastore to copy")->required();
  snap->add_option("DST", c.dst, "the new datastore (must not exist)")->required();
  snap->add_flag("-q,--quiet", c.a.quiet, "no progress on stderr");
  snap->callback([&c] { c.action = [&c] { return cmd_snapshot(c.a.path, c.dst, c.a.quiet); }; });
}

void define_rm(CLI::App& app, command_line& c) {
  auto* rm = app.add_subcommand("rm", "delete a datastore (refuses directories that are not "
                                      "datastores, and datastores in use)");
  add_path(*rm, c.a);
  rm->callback([&c] {
    c.action = [&c] {
      pheap::manager::remove(c.a.path);
      return 0;
    };
  });
}

void define_upgrade(CLI::App& app, command_line& c) {
  auto* up = app.add_subcommand(
      "upgrade", "convert the store-format-3 datastore SRC in place to this build's format 4 "
                 "(readers beside a writer; needs SRC closed by everyone), or, with DST, write a "
                 "format-4 copy DST of the store-format-2 datastore SRC (every page and the root; "
                 "SRC is only read)");
  up->add_option("SRC", c.a.path, "the datastore to convert (format 3, or format 2 with DST)")->required();
  up->add_option("DST", c.dst, "for a format-2 SRC: the new datastore (must not exist)");
  up->add_flag("-q,--quiet", c.a.quiet, "no message on stderr");
  up->callback([&c] { c.action = [&c] { return cmd_upgrade(c.a.path, c.dst, c.a.quiet); }; });
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pheap: inspect, check, copy and delete pheap datastores.", "pheap"};
  tool_support::set_up(app, "pheap", kNotes);
  command_line c;
  define_ls(app, c);
  define_info(app, c);
  define_check(app, c);
  define_snapshot(app, c);
  define_rm(app, c);
  define_upgrade(app, c);
  return tool_support::parse_and_run(app, argc, argv, c.action, describe);
}
