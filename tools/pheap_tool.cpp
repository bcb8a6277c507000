// pheap — command-line tool for pheap datastores.
//
//   pheap ls PATH             named and unique objects: kind, name, type, length, bytes, description
//   pheap info PATH           format/library version, uuid, epoch, capacity, page size, usage
//   pheap check PATH          store (superblocks and the page-map directory: verified by
//                             opening; then every page that may hold data read and verified
//                             against its checksum in the map, every map block on the way) +
//                             allocator and directory invariants; exit 0 = sound, 1 = problems
//                             (listed)
//   pheap snapshot SRC DST    copy of SRC's last watermark into the new datastore DST
//   pheap rm PATH             delete a datastore (refuses non-datastores)
//   pheap upgrade SRC DST     format-3 copy DST of the store-format-2 datastore SRC (every page,
//                             the root; SRC is only read)
//
// Every command opens read-only (rm takes the exclusive lock) and fails with exit code 2 and
// a message naming the path and the cause — e.g. "locked" when another process has the
// datastore open for writing — instead of waiting.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "pheap/pheap.hpp"
#include "pheap/sparse_store.hpp"

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: pheap ls PATH | info PATH | check PATH | snapshot SRC DST | rm PATH | "
               "upgrade SRC DST\n");
  return 2;
}

std::string human(std::uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

pheap::options quiet_options() {
  pheap::options o;
  o.pager.buffer_size = 64ull << 20;  // a tool needs little memory
  return o;
}

void print_object(const pheap::object_info& i) {
  std::printf("%-7s %-30.*s %-30.*s %8zu %10zu  %.*s\n", pheap::to_string(i.kind),
              static_cast<int>(i.name.size()), i.name.data(), static_cast<int>(i.type_name.size()),
              i.type_name.data(), i.length, i.length * i.type_size,
              static_cast<int>(i.description.size()), i.description.data());
}

int cmd_ls(const std::string& path) {
  pheap::manager m(pheap::open_read_only, path, quiet_options());
  std::printf("%-7s %-30s %-30s %8s %10s  %s\n", "KIND", "NAME", "TYPE", "LENGTH", "BYTES", "DESCRIPTION");
  for (auto it = m.named_begin(); it != m.named_end(); ++it) print_object(*it);
  for (auto it = m.unique_begin(); it != m.unique_end(); ++it) print_object(*it);
  std::printf("%zu named, %zu unique, %zu anonymous objects\n", m.get_num_named_objects(),
              m.get_num_unique_objects(), m.get_num_anonymous_objects());
  return 0;
}

int cmd_info(const std::string& path) {
  pheap::manager m(pheap::open_read_only, path, quiet_options());
  const pheap::manager_stats s = m.stats();
  std::printf("path:            %s\n", path.c_str());
  std::printf("uuid:            %s\n", m.get_uuid().c_str());
  std::printf("store format:    %u\n", pheap::sparse_store::format_version);
  std::printf("writer version:  %u\n", m.get_version());
  std::printf("epoch:           %llu\n", static_cast<unsigned long long>(s.epoch));
  std::printf("description:     %s\n", m.get_description().c_str());
  std::printf("capacity:        %s (%llu bytes)\n", human(s.capacity).c_str(), static_cast<unsigned long long>(s.capacity));
  std::printf("page size:       %s\n", human(s.page_size).c_str());
  std::printf("chunk size:      %s\n", human(s.chunk_size).c_str());
  std::printf("chunks in use:   %llu of %llu (%s)\n", static_cast<unsigned long long>(s.chunks_in_use),
              static_cast<unsigned long long>(s.num_chunks), human(s.chunks_in_use * s.chunk_size).c_str());
  std::printf("allocated:       %s small, %s large\n", human(s.small_bytes).c_str(), human(s.large_bytes).c_str());
  std::printf("objects:         %llu named, %llu unique, %llu anonymous\n",
              static_cast<unsigned long long>(s.named_objects), static_cast<unsigned long long>(s.unique_objects),
              static_cast<unsigned long long>(s.anonymous_objects));
  std::printf("on disk:         %s\n", human(s.disk_bytes).c_str());
  std::printf("live data:       %s (pages with data)\n", human(s.store.live_bytes).c_str());
  return 0;
}

// Reads every page of the store that may hold data (in batches), so each is verified against
// its checksum in the page map; returns one problem per page that fails (a batch that
// fails is read again page by page to name them all). Runs before the heap is mapped: a
// damaged page read through the pager would end the tool by SIGBUS instead of a report.
std::vector<std::string> scrub_pages(const std::string& path, std::uint64_t& pages_read) {
  pheap::store_options o;
  o.read_only = true;
  const auto s = pheap::sparse_store::open(path, o);
  const std::uint32_t ps = s->page_size();
  const std::uint64_t n = s->capacity() / ps;
  constexpr std::size_t batch_pages = 256;
  std::vector<std::byte> buf(batch_pages * ps);
  std::vector<pheap::page_read> batch;
  std::vector<std::string> problems;
  auto read_batch = [&] {
    if (batch.empty()) return;
    try {
      s->read_pages(batch);
    } catch (const pheap::error&) {
      for (const auto& r : batch) {
        try {
          s->read_pages(std::span<const pheap::page_read>(&r, 1));
        } catch (const pheap::error& e) {
          problems.push_back(e.what());
        }
      }
    }
    pages_read += batch.size();
    batch.clear();
  };
  for (std::uint64_t p = 0; p < n; ++p) {
    if (!s->may_have_data(p)) continue;
    batch.push_back({p, buf.data() + batch.size() * ps});
    if (batch.size() == batch_pages) read_batch();
  }
  read_batch();
  return problems;
}

int cmd_check(const std::string& path) {
  // Opening verifies the superblocks and the page-map directory; the scrub verifies every map
  // block with data and every page with data; then the heap root record and header; then every
  // allocator and directory invariant.
  std::uint64_t scrubbed = 0;
  const auto damaged = scrub_pages(path, scrubbed);
  if (!damaged.empty()) {
    for (std::size_t i = 0; i < std::min<std::size_t>(damaged.size(), 50); ++i) {
      std::printf("problem: %s\n", damaged[i].c_str());
    }
    if (damaged.size() > 50) std::printf("problem: ... and %zu more pages\n", damaged.size() - 50);
    std::printf("%s: %zu damaged page(s) of %llu read; heap invariants not checked (the heap "
                "would read damaged pages)\n",
                path.c_str(), damaged.size(), static_cast<unsigned long long>(scrubbed));
    return 1;
  }
  pheap::manager m(pheap::open_read_only, path, quiet_options());
  const auto problems = m.check();
  for (const auto& p : problems) std::printf("problem: %s\n", p.c_str());
  if (!problems.empty()) {
    std::printf("%s: %zu problem(s) at epoch %llu\n", path.c_str(), problems.size(),
                static_cast<unsigned long long>(m.epoch()));
    return 1;
  }
  std::printf("%s: sound (epoch %llu, %zu named objects, %llu pages verified)\n", path.c_str(),
              static_cast<unsigned long long>(m.epoch()), m.get_num_named_objects(),
              static_cast<unsigned long long>(scrubbed));
  return 0;
}

// Converts a store-format-2 datastore (pheap::sparse_store::upgrade); the heap inside is
// copied page for page, so any heap the library reads stays readable.
int cmd_upgrade(const std::string& src, const std::string& dst) {
  pheap::sparse_store::upgrade(src, dst);
  std::printf("%s (store format 2) upgraded to %s (store format %u)\n", src.c_str(), dst.c_str(),
              pheap::sparse_store::format_version);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return usage();
  const std::string cmd = argv[1];
  try {
    if (cmd == "ls" && argc == 3) return cmd_ls(argv[2]);
    if (cmd == "info" && argc == 3) return cmd_info(argv[2]);
    if (cmd == "check" && argc == 3) return cmd_check(argv[2]);
    if (cmd == "snapshot" && argc == 4) {
      pheap::manager::copy(argv[2], argv[3]);
      std::printf("snapshot of %s written to %s\n", argv[2], argv[3]);
      return 0;
    }
    if (cmd == "rm" && argc == 3) {
      pheap::manager::remove(argv[2]);
      return 0;
    }
    if (cmd == "upgrade" && argc == 4) return cmd_upgrade(argv[2], argv[3]);
  } catch (const pheap::error& e) {
    std::fprintf(stderr, "pheap %s: %s%s\n", cmd.c_str(), e.what(),
                 e.code() == pheap::errc::locked ? " (another process has it open; close it first)" : "");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pheap %s: %s\n", cmd.c_str(), e.what());
    return 2;
  }
  return usage();
}
