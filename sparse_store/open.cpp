// sparse_store/open.cpp — opening a datastore (FORMAT.md "Open"):
//
//   1. lock: the datastore lock (creation.hpp), before anything is read;
//   2. choose the superblock slot: the valid record with the highest epoch the caller accepts
//      (older and newer formats are refused saying what to do);
//   3. read the page-map directory copy the record names and verify it against the record's
//      length and CRC (and its own header: this datastore, an epoch not after the record's).
//
// Nothing else is read: map blocks are loaded on first use and verified against the directory,
// segment files are opened on first use and checked then (page_map.hpp, segment_files.hpp). So
// open costs the same after a crash as after a clean close — there is no journal to replay and
// nothing to repair: a crash only leaves copies no durable map names, in homes the next writes
// reuse. A read-only open writes nothing; a read-write open writes only to confirm a prepared
// epoch the caller accepted (two-phase commit).
#include "pheap/error.hpp"
#include "commit_state.hpp"
#include "creation.hpp"
#include "layout.hpp"

namespace pheap::store {

namespace {

std::vector<dir_entry> read_directory(io::engine& eng, io::file& f, const superblock& sb) {
  const map_layout layout(sb.page_count());
  std::vector<std::byte> buf(sb.directory_length);
  const std::uint64_t at = layout.directory_offset(sb.directory_home);
  if (const std::uint64_t size = eng.size(f); size < at + buf.size()) {
    // (read past the end it would be zeros, reported as a checksum mismatch: say what it is)
    throw error(errc::corrupt, f.path(), "open",
                "truncated: the file has " + std::to_string(size) + " bytes, and the page-map "
                "directory of epoch " + std::to_string(sb.epoch) + " lies at bytes " +
                    std::to_string(at) + "-" + std::to_string(at + buf.size() - 1));
  }
  eng.read_at(f, at, buf.data(), buf.size());
  std::vector<dir_entry> entries;
  const std::string why = check_directory(buf.data(), buf.size(), sb.directory_crc, sb.epoch,
                                          layout.blocks, sb.id, entries);
  if (!why.empty()) {
    throw error(errc::corrupt, f.path(), "open",
                "the page-map directory of epoch " + std::to_string(sb.epoch) + " (copy in home " +
                    std::to_string(sb.directory_home) + "): " + why);
  }
  return entries;
}

}  // namespace

std::unique_ptr<store_impl> store_impl::attach(std::shared_ptr<io::engine> eng,
                                               const std::string& dir,
                                               std::unique_ptr<io::file> lock, bool read_only,
                                               std::uint64_t max_epoch) {
  const std::string super_path = join(dir, super_name);
  const auto mode = read_only ? io::open_mode::read_only : io::open_mode::read_write;
  auto super = eng->open(super_path, mode);
  chosen_slot chosen = read_superblock(*eng, *super, super_path, max_epoch);
  const std::string map_path = join(dir, map_name);
  if (!eng->exists(map_path)) {
    throw error(errc::corrupt, map_path, "open",
                std::string("missing ") + map_name + ", required by epoch " +
                    std::to_string(chosen.sb.epoch));
  }
  std::shared_ptr<io::file> map_file = eng->open(map_path, mode);
  std::vector<dir_entry> directory = read_directory(*eng, *map_file, chosen.sb);
  auto s = std::make_unique<store_impl>(std::move(eng), dir, read_only, std::move(lock),
                                        std::move(super), std::move(map_file), std::move(chosen),
                                        std::move(directory));
  if (!read_only) s->confirm_at_open();
  return s;
}

std::unique_ptr<store_impl> store_impl::open_dir(const std::string& dir, const store_options& opt) {
  auto eng = opt.engine ? opt.engine : io::default_engine();
  if (!eng->exists(dir)) {
    throw error(errc::not_found, dir, "open", "datastore directory does not exist");
  }
  const std::string super_path = join(dir, super_name);
  if (!eng->exists(super_path)) {
    throw error(errc::not_a_datastore, dir, "open",
                "no " + std::string(super_name) + ": not a pheap datastore");
  }
  // Lock first, then read: the superblock cannot change under a shared or exclusive lock.
  auto lock = eng->open(super_path, io::open_mode::read_only);
  lock_datastore(*lock, dir, opt.read_only, opt.read_only ? "open read-only" : "open");
  auto s = attach(std::move(eng), dir, std::move(lock), opt.read_only, opt.max_epoch);
  if (opt.read_only && opt.page_cache_reads) s->segs_.read_through_page_cache();  // none open yet
  return s;
}

}  // namespace pheap::store

namespace pheap {

std::unique_ptr<sparse_store> sparse_store::open(const std::string& dir, const store_options& opt) {
  return store::store_impl::open_dir(dir, opt);
}

}  // namespace pheap
