// sparse_store/store_impl.hpp — the format-3 store: the class every concept file of the store
// implements a part of. This comment is the map of its in-memory state; the protocols are in
// FORMAT.md and on top of each file:
//
//   creation.cpp / create.cpp  creation (atomic, under a temporary name) and locking, remove
//   open.cpp                   open: superblock and directory, nothing else (no recovery work)
//   write_path.cpp             write_pages, discard
//   read_path.cpp              read_pages, may_have_data, page_crc
//   commit.cpp                 commit (and prepare/confirm of a two-phase commit)
//   snapshot.cpp               snapshot
//   direct_map.cpp             direct mapping for the kernel-mmap heap backend
//   upgrade.cpp                format 2 → format 3 copy
//
// State:
//   sb_, sb_slot_  the superblock record of the last durable epoch E and the slot holding it
//                  (sb_mu_; written by commit only, under commit_mu_)
//   map_           the page map: committed / sealed / working versions (page_map.hpp; own lock)
//   segs_          the segment files (segment_files.hpp; own lock)
//   written_       per epoch: the segments its writes touched and whether one was created —
//                  what its commit must fdatasync, and whether the directory needs an fsync
//   commit_mu_     serialises commit, snapshot and the direct-mapping operations
//   poisoned_      set by the first failed write or sync; later mutations throw poisoned
//   table_         the reader table (reader_table.hpp; null: format 3, or a read-only open
//                  without write access to pheap.readers, which keeps the exclusive flock)
//   slot_          a reader's slot in it (-1: not a reader); view_mu_ held exclusively while
//                  refresh() replaces map_ and sb_, shared by a reader's reads
//   views_         the writer's views of reader epochs older than its own (pins.cpp)
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <span>
#include <string>
#include <vector>

#include "pheap/io.hpp"
#include "pheap/sparse_store.hpp"
#include "page_map.hpp"
#include "reader_table.hpp"
#include "segment_files.hpp"
#include "superblock.hpp"

namespace pheap::store {

class store_impl final : public sparse_store {
 public:
  // An opened (or just created) datastore: `sb` the record chosen at open, `directory` its
  // verified page-map directory. `lock` holds the datastore lock for the store's lifetime.
  store_impl(std::shared_ptr<io::engine> eng, std::string dir, bool read_only,
             std::unique_ptr<io::file> lock, std::unique_ptr<io::file> super,
             std::shared_ptr<io::file> map_file, chosen_slot sb, std::vector<dir_entry> directory);
  ~store_impl() override;

  // open.cpp: opens DIR as FORMAT.md "Open" describes (checks, lock, attach).
  static std::unique_ptr<store_impl> open_dir(const std::string& dir, const store_options& opt);
  // open.cpp: the store over the datastore files in `dir`, whose lock `lock` already holds:
  // chooses the superblock slot (≤ max_epoch), reads and verifies the directory; a read-write
  // store confirms an accepted prepared epoch.
  static std::unique_ptr<store_impl> attach(std::shared_ptr<io::engine> eng, const std::string& dir,
                                            std::unique_ptr<io::file> lock, bool read_only,
                                            std::uint64_t max_epoch);
  // create.cpp: writes the epoch-0 files of a datastore with `sb`'s geometry and uuid into the
  // directory `dir` (a creation directory) and makes them durable, names included.
  static void write_new(io::engine& eng, const std::string& dir, const superblock& sb);
  // open.cpp: a read-only open registered in the reader table `table` (FORMAT.md "Readers
  // beside a writer", "Registering").
  static std::unique_ptr<store_impl> open_reader(std::shared_ptr<io::engine> eng, const std::string& dir,
                                                 const store_options& opt, std::unique_ptr<reader_table> table);
  // open.cpp: a writer at its final path joins the reader table (creating it if needed): it
  // honours the readers already attached and raises the floor to its epoch.
  void join_readers(std::uint64_t pin_limit);
  static chosen_slot register_epoch(io::engine& eng, io::file& super, const std::string& super_path,
                                    std::uint64_t max_epoch, reader_table& table, int slot,
                                    const std::string& dir);
  static reader_epoch epoch_of(const superblock& sb);

  // --- sparse_store ---------------------------------------------------------------------------
  void read_pages(std::span<const page_read> batch) override;
  void write_pages(std::span<const page_write> batch) override;
  void discard(std::uint64_t first_page, std::uint64_t count) override;
  bool may_have_data(std::uint64_t page) const override;
  std::optional<std::uint32_t> page_crc(std::uint64_t page) const override;
  void check_files() override;
  std::uint64_t commit(std::span<const std::byte> root) override;
  std::uint64_t commit_if_changed(std::span<const std::byte> root) override;
  std::uint64_t prepare(std::span<const std::byte> root) override;
  std::uint64_t confirm() override;
  bool prepared() const override;
  void snapshot(const std::string& dst) override;
  bool direct_mapping_possible() override;
  std::uint64_t prepare_direct_mapping(std::span<const std::byte> root) override;
  std::vector<direct_extent> direct_extents() override;
  std::uint64_t finish_direct_mapping(std::span<const std::byte> root) override;
  refresh_result refresh() override;
  refresh_result refresh_to(std::uint64_t max_epoch) override;

  std::uint64_t epoch() const override;
  std::vector<std::byte> root() const override;
  const std::string& path() const override { return dir_; }
  const uuid& id() const override { return id_; }
  std::uint32_t page_size() const override { return page_size_; }
  std::uint64_t capacity() const override { return capacity_; }
  std::uint64_t segment_size() const override { return segment_size_; }
  bool read_only() const override { return read_only_; }
  io::engine& engine() const override { return *eng_; }
  store_stats stats() const override;
  std::uint64_t disk_bytes() const override;

 private:
  // write_path.cpp
  struct write_batch;
  write_batch plan_writes(std::span<const page_write> batch);
  void write_homes(write_batch& w);

  // read_path.cpp
  void read_impl(std::span<const page_read> batch, bool retry);
  static constexpr std::size_t kMaxReadRequest = std::size_t{1} << 20;  // bytes of one coalesced read
  static void add_coalesced(std::vector<io::read_request>& reqs, const io::read_request& r);
  void verify(const page_read& r, const page_map::copy& c, const io::file& f, bool retry);

  // pins.cpp — readers beside a writer
  struct overwrite {
    pin_kind kind;
    std::uint64_t id;
    std::shared_ptr<io::file> f;
    std::uint64_t offset;
    std::uint64_t len;
    std::vector<std::uint64_t> epochs;  // the reader epochs that name it
  };
  io::file& pinned_file();
  void repair(pin_kind kind, std::uint64_t epoch, std::span<const std::uint64_t> ids,
              std::span<void* const> bufs, std::size_t len, int slot);
  void check_not_expired(int slot, std::uint64_t epoch) const;
  std::shared_ptr<page_map> view_of(const reader_epoch& r);
  std::vector<reader_epoch> old_readers(std::uint64_t skip_a, std::uint64_t skip_b) const;
  template <class Fn>
  void for_each_view(const std::vector<reader_epoch>& readers, Fn&& fn);
  void protect_pages(std::span<const page_map::planned_write> plan);
  void protect_punch(std::span<const std::uint64_t> pages, std::uint64_t committed);
  void preserve(std::vector<overwrite>& list);
  void punch_pinned(std::vector<pinned_run> runs);
  void note_pin_failure(const std::string& why);
  void reap_readers();
  // open.cpp: the directory epoch r names, read like a reader reads (pins), verified.
  std::vector<dir_entry> read_directory_of(const reader_epoch& r, int slot);
  std::unique_ptr<page_map> reader_map(std::vector<dir_entry> directory, std::uint64_t epoch, int slot);
  // A reader's reads hold view_mu_ shared (refresh() swaps the map under it).
  std::shared_lock<std::shared_mutex> reading() const;

  // commit.cpp — the steps of FORMAT.md "Commit"
  struct epoch_files {
    std::set<std::uint64_t> segments;
    bool created = false;
  };
  struct commit_state;
  void protect_map(const commit_state& c);  // pins.cpp
  void check_commit(std::span<const std::byte> root, const char* op) const;
  commit_state seal_epoch();
  void write_map(const commit_state& c);
  void sync_epoch_files(const commit_state& c);
  superblock next_record(const commit_state& c, std::span<const std::byte> root, bool prepared) const;
  void write_superblock(const superblock& next, unsigned slot);
  void punch_freed(const commit_state& c, std::uint64_t committed);
  void publish(const commit_state& c, superblock next, unsigned slot);
  std::uint64_t commit_locked(std::span<const std::byte> root, bool prepare);
  void note_written(std::uint64_t epoch, std::uint64_t seg, bool created);
  void confirm_at_open();

  // snapshot.cpp
  void snapshot_impl(const std::string& dst);
  void copy_segment(std::uint64_t seg, const std::string& to, const uuid& id,
                    const std::vector<block_version>& versions);
  void write_snapshot_map(const std::string& path, const uuid& id, std::uint64_t epoch,
                          const std::vector<block_version>& versions, superblock& out);

  // direct_map.cpp
  bool laid_out();
  void relocate_second_homes();
  void punch_stale_copies();
  void adopt_files();
  // Calls fn(file, home, first, end) for every run of pages [first, end) (absolute page
  // numbers) whose home `home` holds data on disk that no version of the map names (junk:
  // stale copies, copies of a discarded page, writes of an epoch a crash ended); home 0 only
  // if `first_only`.
  template <class Fn>
  void for_each_stale_run(bool first_only, Fn&& fn);

  // failure handling
  void poison(const std::string& cause);
  std::string poison_cause() const;
  void check_usable(const char* op) const;
  void check_writable(const char* op) const;
  void check_page(std::uint64_t page, const void* buf, const char* op) const;

  const std::shared_ptr<io::engine> eng_;
  const std::string dir_;
  const bool read_only_;
  const std::unique_ptr<io::file> lock_;   // pheap.super, holds the flock for our lifetime
  const std::unique_ptr<io::file> super_;  // pheap.super, for reading and writing slots
  // Geometry and identity: fixed at open.
  const uuid id_;
  const std::uint32_t page_size_;
  const std::uint64_t capacity_;
  const std::uint64_t segment_size_;
  const std::uint64_t page_count_;

  mutable std::shared_mutex sb_mu_;
  superblock sb_;
  unsigned sb_slot_;

  const std::shared_ptr<io::file> map_file_;  // pheap.map
  std::unique_ptr<page_map> map_;  // replaced only by a reader's refresh()
  segment_files segs_;

  std::mutex written_mu_;
  std::map<std::uint64_t, epoch_files> written_;

  std::mutex commit_mu_;
  // A prepared epoch waiting for confirm() (under commit_mu_), and whether one is.
  struct pending_epoch;
  std::unique_ptr<pending_epoch> pending_;
  std::atomic<bool> prepared_{false};
  // Between prepare_direct_mapping and finish_direct_mapping the files' home 0 holds what a
  // mapping writes: a snapshot copies it as it is (the copy is finished the same way).
  std::atomic<bool> direct_mapped_{false};

  std::atomic<bool> poisoned_{false};
  std::atomic<std::uint64_t> changes_{0};  // write_pages/discard calls since the last seal
  mutable std::mutex poison_mu_;
  std::string poison_cause_;

  // Readers beside a writer (pins.cpp).
  std::unique_ptr<reader_table> table_;
  // A reader's slot in the table (-1: not a reader). Atomic: refresh() moves it to the new
  // slot under view_mu_, while reading() and may_have_data() of the pager's threads look at
  // it before taking view_mu_ (a data race TSan saw under pager::refresh).
  std::atomic<int> slot_{-1};

  std::atomic<std::uint64_t> max_epoch_{~std::uint64_t{0}};  // refresh_to() raises it
  bool page_cache_reads_ = false;
  mutable std::shared_mutex view_mu_;
  std::mutex refresh_mu_;
  std::mutex pinned_mu_;
  std::shared_ptr<io::file> pinned_;
  std::mutex preserve_mu_;
  std::mutex views_mu_;
  std::map<std::uint64_t, std::shared_ptr<page_map>> views_;
  std::string pin_failure_;  // the first failure to keep a copy (poison_mu_)
  std::atomic<std::uint64_t> stat_pins_{0}, stat_pinned_reads_{0}, stat_pin_bytes_{0}, stat_protect_ns_{0};

  std::atomic<std::uint64_t> stat_pages_read_{0}, stat_read_requests_{0}, stat_zero_pages_{0}, stat_pages_written_{0},
      stat_commits_{0}, stat_map_bytes_{0}, stat_freed_pages_{0}, stat_commit_ns_{0};
};

}  // namespace pheap::store
