// sparse_store/open.cpp — opening a datastore (FORMAT.md "Open"; a reader beside a writer:
// "Readers beside a writer"):
//
//   1. lock: the datastore lock (creation.hpp), before anything is read — a read-write open
//      takes it exclusively; a read-only open of a format-4 datastore registers in the reader
//      table instead (open_reader) and takes it shared only where it cannot (no write access
//      to pheap.readers, or format 3);
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

std::string older_writable(const std::string& super_path) {
  return "written by store format 3, which this build opens read-only; convert it in place "
         "with `pheap upgrade " + super_path.substr(0, super_path.size() - std::string(super_name).size() - 1) +
         "` (format 4: readers beside a writer; older pheap releases cannot open it afterwards)";
}

}  // namespace

std::vector<dir_entry> store_impl::read_directory_of(const reader_epoch& r, int slot) {
  const map_layout layout(page_count_);
  io::file& f = *map_file_;
  std::vector<std::byte> buf(layout.directory_slot);
  const std::uint64_t at = layout.directory_offset(r.dir_home);
  eng_->read_at(f, at, buf.data(), buf.size());
  const std::uint64_t id = 0;
  void* b = buf.data();
  repair(pin_kind::directory, r.epoch, std::span<const std::uint64_t>(&id, 1), std::span<void* const>(&b, 1),
         buf.size(), slot);
  std::vector<dir_entry> entries;
  const std::string why = check_directory(buf.data(), r.dir_length, r.dir_crc, r.epoch, layout.blocks, id_, entries);
  if (!why.empty()) {
    throw error(errc::corrupt, f.path(), "open",
                "the page-map directory of epoch " + std::to_string(r.epoch) + " (copy in home " +
                    std::to_string(r.dir_home) + "): " + why);
  }
  return entries;
}

std::unique_ptr<page_map> store_impl::reader_map(std::vector<dir_entry> directory, std::uint64_t epoch, int slot) {
  auto m = std::make_unique<page_map>(*eng_, map_file_, id_, page_count_,
                                      std::move(directory), epoch);
  m->set_block_reader([this, epoch, slot](std::span<const io::read_request> reads, std::span<const std::uint64_t> blocks) {
    eng_->read(reads);
    std::vector<void*> bufs;
    for (const auto& q : reads) bufs.push_back(q.buf);
    repair(pin_kind::block, epoch, blocks, bufs, map_block_size, slot);
  });
  return m;
}

std::unique_ptr<store_impl> store_impl::attach(std::shared_ptr<io::engine> eng,
                                               const std::string& dir,
                                               std::unique_ptr<io::file> lock, bool read_only,
                                               std::uint64_t max_epoch) {
  const std::string super_path = join(dir, super_name);
  const auto mode = read_only ? io::open_mode::read_only : io::open_mode::read_write;
  auto super = eng->open(super_path, mode);
  chosen_slot chosen = read_superblock(*eng, *super, super_path, max_epoch);
  if (!read_only && chosen.sb.version != sparse_store::format_version) {
    throw error(errc::older_format, super_path, "open", older_writable(super_path));
  }
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
  if (opt.read_only) {
    // Which protocol: the superblock read without a lock (peek.cpp says why that is safe).
    auto super = eng->open(super_path, io::open_mode::read_only);
    const chosen_slot seen = read_superblock(*eng, *super, super_path, opt.max_epoch);
    if (seen.sb.version == sparse_store::format_version && opt.beside_writer) {
      // No table (no write access to pheap.readers, or no space to make one: then no writer
      // has it either) → the shared flock below, as format 3.
      std::unique_ptr<reader_table> table;
      try {
        table = reader_table::attach(*eng, dir, {seen.sb.page_size, seen.sb.id, opt.pin_limit});
      } catch (const error& e) {
        if (e.code() != errc::no_space) throw;
      }
      if (table) return open_reader(std::move(eng), dir, opt, std::move(table));
    }
  }
  // Lock first, then read: the superblock cannot change under a shared or exclusive lock.
  auto lock = eng->open(super_path, io::open_mode::read_only);
  lock_datastore(*lock, dir, opt.read_only, opt.read_only ? "open read-only" : "open");
  auto s = attach(std::move(eng), dir, std::move(lock), opt.read_only, opt.max_epoch);
  if (opt.read_only && opt.page_cache_reads) s->segs_.read_through_page_cache();  // none open yet
  if (!opt.read_only) s->join_readers(opt.pin_limit);
  return s;
}

// Registering (FORMAT.md "Readers beside a writer"): claim a slot; read the superblock; publish
// the epoch chosen in the slot (a full fence); read the floor. A floor above the epoch means
// the writer committed past it and may already overwrite what only it names: read the
// superblock again (it holds a newer epoch) and publish that. Otherwise the writer's scans
// from here on see the slot (it raised the floor, then scans: one of the two sees the other).
std::unique_ptr<store_impl> store_impl::open_reader(std::shared_ptr<io::engine> eng, const std::string& dir,
                                                    const store_options& opt,
                                                    std::unique_ptr<reader_table> table) {
  const std::string super_path = join(dir, super_name);
  const int slot = table->claim(dir, "open read-only");
  try {
    auto super = eng->open(super_path, io::open_mode::read_only);
    chosen_slot chosen = register_epoch(*eng, *super, super_path, opt.max_epoch, *table, slot, dir);
    const std::string map_path = join(dir, map_name);
    if (!eng->exists(map_path)) {
      throw error(errc::corrupt, map_path, "open",
                  std::string("missing ") + map_name + ", required by epoch " + std::to_string(chosen.sb.epoch));
    }
    std::shared_ptr<io::file> map_file = eng->open(map_path, io::open_mode::read_only);
    const reader_epoch r = epoch_of(chosen.sb);
    auto s = std::make_unique<store_impl>(std::move(eng), dir, true, nullptr, std::move(super), map_file,
                                          std::move(chosen), std::vector<dir_entry>{});
    s->table_ = std::move(table);
    s->slot_ = slot;
    s->max_epoch_ = opt.max_epoch;
    s->page_cache_reads_ = opt.page_cache_reads;
    if (opt.page_cache_reads) s->segs_.read_through_page_cache();
    s->map_ = s->reader_map(s->read_directory_of(r, slot), r.epoch, slot);
    return s;
  } catch (...) {
    if (table) table->release(slot);  // else the store owned it: its destructor released it
    throw;
  }
}

chosen_slot store_impl::register_epoch(io::engine& eng, io::file& super, const std::string& super_path,
                                       std::uint64_t max_epoch, reader_table& table, int slot,
                                       const std::string& dir) {
  for (int tries = 0;; ++tries) {
    chosen_slot chosen = read_superblock(eng, super, super_path, max_epoch);
    table.publish(slot, epoch_of(chosen.sb));
    const std::uint64_t floor = table.floor();
    if (chosen.sb.epoch >= floor) return chosen;
    // Only a caller's max_epoch (or a writer committing faster than we read) keeps us below.
    if (max_epoch != ~std::uint64_t{0} || tries >= 1000) {
      throw error(errc::stale, dir, "open read-only",
                  "epoch " + std::to_string(chosen.sb.epoch) + " (the newest at or below " +
                      (max_epoch == ~std::uint64_t{0} ? std::string("the newest") : std::to_string(max_epoch)) +
                      ") is older than the writer's newest watermark " + std::to_string(floor) +
                      ", which it may already be overwriting: open a newer watermark");
    }
  }
}

reader_epoch store_impl::epoch_of(const superblock& sb) {
  return {sb.epoch, sb.directory_length, sb.directory_home, sb.directory_crc};
}

void store_impl::join_readers(std::uint64_t pin_limit) {
  table_ = reader_table::attach(*eng_, dir_, {page_size_, id_, pin_limit});
  if (!table_) {
    throw error(errc::io, join(dir_, readers_name), "open",
                "cannot open it for writing: readers registered in it would go unseen");
  }
  // Readers above this open's epoch read one a two-phase commit left unconfirmed and this open
  // did not accept: it is gone, and so is their watermark.
  for (const reader_epoch& r : table_->active_epochs()) {
    if (r.epoch > epoch()) table_->expire(r.epoch, reader_table::expiry::pin_failed);
  }
  table_->set_floor(epoch());
  table_->adopt_writer_state();
}

// A reader moves to the newest watermark (FORMAT.md "Readers beside a writer", "refresh"):
// registered at it in a second slot first (the old epoch stays pinned meanwhile), its
// directory read, the pages whose copy differs found block by block, then the map swapped under
// the exclusive view lock and the old slot released.
refresh_result store_impl::refresh() { return refresh_to(max_epoch_); }

refresh_result store_impl::refresh_to(std::uint64_t max_epoch) {
  if (slot_ < 0) {
    throw error(errc::invalid_argument, dir_, "refresh",
                read_only_ ? "this read-only store holds the datastore's shared flock (format 3, "
                             "no write access to pheap.readers, or beside_writer = false): reopen "
                             "it to see a newer watermark"
                           : "a read-write store is always at its newest watermark");
  }
  std::lock_guard rl(refresh_mu_);
  if (max_epoch < epoch()) {
    throw error(errc::invalid_argument, dir_, "refresh",
                "asked to move to epoch " + std::to_string(max_epoch) + " or below, but this reader reads epoch " +
                    std::to_string(epoch()) + " already (a reader never moves back)");
  }
  refresh_result out;
  const int next = table_->claim(dir_, "refresh");
  try {
    chosen_slot chosen = register_epoch(*eng_, *super_, join(dir_, super_name), max_epoch, *table_, next, dir_);
    const std::uint64_t now = epoch();
    out.epoch = chosen.sb.epoch;
    if (chosen.sb.epoch == now) {
      table_->release(next);
      max_epoch_ = max_epoch;
      return out;
    }
    const reader_epoch r = epoch_of(chosen.sb);
    std::unique_ptr<page_map> m = reader_map(read_directory_of(r, next), r.epoch, next);
    const std::vector<dir_entry> before = map_->committed_directory(), after = m->committed_directory();
    for (std::uint64_t b = 0; b < after.size(); ++b) {
      if (before[b] == after[b]) continue;
      const std::uint64_t first = b * pages_per_block, end = std::min(page_count_, first + pages_per_block);
      if (!map_->is_loaded(b)) {  // nothing of it was read: nothing of it can be resident
        out.changed.emplace_back(first, end);
        continue;
      }
      m->load_range(first, end);
      const block_version old_v = map_->committed_version(b), new_v = m->committed_version(b);
      for (std::uint64_t p = first; p < end; ++p) {
        const auto i = static_cast<std::uint32_t>(p - first);
        if (old_v.home(i) == new_v.home(i) && old_v.crc[i] == new_v.crc[i]) continue;
        if (!out.changed.empty() && out.changed.back().second == p) {
          out.changed.back().second = p + 1;
        } else {
          out.changed.emplace_back(p, p + 1);
        }
      }
    }
    const int old = slot_;
    {
      std::unique_lock vl(view_mu_);
      m->adopt_unchanged(*map_);
      map_ = std::move(m);
      std::unique_lock sl(sb_mu_);
      sb_ = std::move(chosen.sb);
      sb_slot_ = chosen.slot;
      slot_ = next;
    }
    table_->release(old);
    max_epoch_ = max_epoch;
    out.moved = true;
    return out;
  } catch (...) {
    if (slot_ != next) table_->release(next);
    throw;
  }
}

}  // namespace pheap::store

namespace pheap {

std::unique_ptr<sparse_store> sparse_store::open(const std::string& dir, const store_options& opt) {
  return store::store_impl::open_dir(dir, opt);
}

}  // namespace pheap
