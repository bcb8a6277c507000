// sparse_store::peek — the last commit of a datastore read from its superblock alone, without
// the flock, so that a reader can look at a datastore while its writer runs (pheap info).
//
// Why reading without the lock is safe: a commit writes only the slot of its own epoch (E % 2)
// and syncs it; the other slot keeps epoch E-1 intact (superblock.hpp). A read racing that
// write sees the new slot torn (its CRC fails: the old commit is reported), complete (the new
// one), or not yet written (the old one); read_superblock picks the newest valid slot, so the
// answer is always a commit that was durable when it was read. Nothing but the superblock is
// read: segment and map files may change under an unlocked reader, so their bytes are not.
// disk_bytes sums the allocated blocks of the directory's files at the time of the call (an
// estimate while a writer changes them).
//
// Errors: as open() for a missing directory, a directory without pheap.super, or a superblock
// with no valid slot (not_found, not_a_datastore, newer_format, older_format, corrupt).
#include <sys/stat.h>

#include <filesystem>

#include "layout.hpp"
#include "pheap/error.hpp"
#include "pheap/sparse_store.hpp"
#include "reader_table.hpp"
#include "superblock.hpp"

namespace pheap {

refresh_result sparse_store::refresh() {
  throw error(errc::invalid_argument, path(), "refresh", "this store does not read beside a writer");
}

refresh_result sparse_store::refresh_to(std::uint64_t) { return refresh(); }

std::vector<reader_info> sparse_store::readers(const std::string& dir, std::shared_ptr<io::engine> engine) {
  using namespace store;
  auto eng = engine ? engine : io::default_engine();
  const std::string super_path = join(dir, super_name);
  if (!eng->exists(super_path)) return {};
  auto f = eng->open(super_path, io::open_mode::read_only);
  return reader_table::list(*eng, dir, read_superblock(*eng, *f, super_path).sb.id);
}

store_peek sparse_store::peek(const std::string& dir, std::shared_ptr<io::engine> engine) {
  using namespace store;
  auto eng = engine ? engine : io::default_engine();
  if (!eng->exists(dir)) throw error(errc::not_found, dir, "peek", "datastore directory does not exist");
  const std::string super_path = join(dir, super_name);
  if (!eng->exists(super_path)) {
    throw error(errc::not_a_datastore, dir, "peek",
                "no " + std::string(super_name) + ": not a pheap datastore");
  }
  auto f = eng->open(super_path, io::open_mode::read_only);
  superblock sb = read_superblock(*eng, *f, super_path).sb;
  store_peek p;
  p.epoch = sb.epoch;
  p.id = sb.id;
  p.format_version = sb.version;
  p.page_size = sb.page_size;
  p.capacity = sb.capacity;
  p.segment_size = sb.segment_size;
  p.root = std::move(sb.root);
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    struct stat st {};
    if (::stat(e.path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      p.disk_bytes += static_cast<std::uint64_t>(st.st_blocks) * 512;
    }
  }
  return p;
}

}  // namespace pheap
