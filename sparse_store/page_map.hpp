// sparse_store/page_map.hpp — the page map in DRAM, across epochs, and the rules that keep a
// page's new copy away from every copy a durable epoch references (FORMAT.md "Write path",
// "Commit").
//
// Per map block (map_codec.hpp) up to three versions exist in DRAM:
//   committed  the block as of the last durable epoch E (null: every page without data)
//   sealed     as of the epoch E+1 a commit is writing out (from the seal to the publish)
//   working    as of the open epoch W (E+1, or E+2 while E+1 is being committed): every
//              write_pages()/discard() since the seal, `touched` marking the pages it changed
// and reads see the newest one. Blocks are loaded lazily — on the first read, write, discard or
// may_have_data() of one of their pages — and verified against the directory (check_block); a
// block the directory says has no data needs no read. Loaded blocks stay loaded.
//
// Where a write goes (begin_write): a page already written in W is rewritten in place (same
// home); otherwise to the home its previous version (sealed, else committed) does not use
// (home 0 for a page without data). While E+1 is sealed but not yet durable, a write of a page
// E+1 changed waits (the "barrier") when its target is still referenced by E (E+1 moved the
// page to the other home) or when E+1 freed the page (its homes are punched once E+1 is
// durable); other pages never wait. So no write lands on a copy a durable superblock may
// still name.
//
// Locking: one shared mutex `mu_` guards the versions, the epoch state (working epoch,
// in-flight writes, seal) and the damaged pages; begin_write/end_write bracket a batch's I/O
// and the seal waits until every batch of the sealed epoch has ended, so a batch lands wholly
// in one epoch. Loading is serialised by `load_mu_` and publishes a block with a release store;
// may_have_data() is lock-free once the block is loaded.
//
// DRAM: a loaded block costs ≈ 4.3 KiB per version (4.6 bytes per page), at most three
// versions while a commit runs and writers rewrite the pages it changed: ≤ 14 bytes per page
// of a loaded block, ≈ 4.6 bytes per page once nothing is dirty; 48 bytes per block whether
// loaded or not (FORMAT.md "Limits").
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "pheap/io.hpp"
#include "pheap/sparse_store.hpp"
#include "map_codec.hpp"

namespace pheap::store {

// Byte layout of DIR/pheap.map (FORMAT.md "The page map"): two directory homes of
// `directory_slot` bytes each, then the two homes of every map block side by side.
struct map_layout {
  std::uint64_t pages;
  std::uint64_t blocks;
  std::uint64_t directory_slot;

  explicit map_layout(std::uint64_t page_count)
      : pages(page_count),
        blocks(block_count(page_count)),
        directory_slot((directory_length(page_count) + map_block_size - 1) / map_block_size *
                       map_block_size) {}
  std::uint64_t directory_offset(unsigned home) const { return home * directory_slot; }
  std::uint64_t block_offset(std::uint64_t b, unsigned home) const {
    return 2 * directory_slot + (2 * b + home) * map_block_size;
  }
  std::uint64_t file_size() const { return 2 * directory_slot + 2 * blocks * map_block_size; }
  std::uint32_t pages_in_block(std::uint64_t b) const {
    const std::uint64_t first = b * pages_per_block;
    return static_cast<std::uint32_t>(std::min<std::uint64_t>(pages_per_block, pages - first));
  }
};

class page_map {
 public:
  // `directory`: the entries of the committed epoch `epoch` (verified by the caller).
  page_map(io::engine& eng, std::shared_ptr<io::file> map_file, const uuid& id,
           std::uint64_t pages, std::vector<dir_entry> directory, std::uint64_t epoch);
  ~page_map();

  const map_layout& layout() const { return layout_; }
  io::file& file() const { return *file_; }
  const std::shared_ptr<io::file>& file_ptr() const { return file_; }

  // How committed block copies are read: one engine batch, a request per block of `blocks`
  // (default: eng.read). A reader's page map, and the writer's views of reader epochs, replace
  // what the writer moved into pheap.pinned (pins.cpp). Set before the first load.
  using block_reader = std::function<void(std::span<const io::read_request>, std::span<const std::uint64_t>)>;
  void set_block_reader(block_reader r) { block_reader_ = std::move(r); }
  // A read-only map taking over from `old` (a reader's refresh): every loaded block of `old`
  // whose directory entry is the same in this map's directory is moved here as it is.
  void adopt_unchanged(page_map& old);
  bool is_loaded(std::uint64_t b) const { return loaded(b) != nullptr; }

  // --- loading -------------------------------------------------------------------------------
  // Loads every not yet loaded block of the pages [first, end) / of `pages`, reading those the
  // directory says hold data (one engine batch). Throws errc::corrupt naming pheap.map, the
  // block, its pages and the cause (check_block), or the read error.
  void load_range(std::uint64_t first, std::uint64_t end);
  void load_pages(std::span<const std::uint64_t> pages);
  // True if the page's newest version has data. Lock-free once its block is loaded; loads it
  // otherwise (a block that cannot be loaded answers true: the read then reports why).
  bool may_have_data(std::uint64_t page);
  // The first page of [first, end) whose newest version has data, or nullopt. Blocks the
  // directory says hold no data are skipped unread; the others are loaded in turn until one is
  // found. Unlike may_have_data(), a block that cannot be loaded throws (check_block's error).
  std::optional<std::uint64_t> first_with_data(std::uint64_t first, std::uint64_t end);

  // --- reads ---------------------------------------------------------------------------------
  struct copy {
    page_home home = page_home::none;
    std::uint32_t crc = 0;
    std::uint32_t alt_crc = 0;  // damaged: a failed in-place rewrite left this one or crc
    bool damaged = false;
  };
  // The newest copy of each page (its block loaded by the caller).
  void newest(std::span<const std::uint64_t> pages, std::span<copy> out) const;

  // --- the working epoch ---------------------------------------------------------------------
  struct planned_write {
    std::uint64_t page;
    std::uint32_t crc;
    page_home target = page_home::none;
    bool in_place = false;
    std::uint32_t old_crc = 0;
  };
  // Picks each page's target home (see the file comment), waiting for a running seal and for
  // the barriers of the pages; `check` runs at every wake-up and may throw (poisoned store).
  // Counts the batch as in flight. Returns the epoch the batch belongs to. Blocks loaded.
  std::uint64_t begin_write(std::span<planned_write> plan, const std::function<void()>& check);
  // Ends a batch begun in `epoch`: on success its copies become the pages' newest versions;
  // after a failed write, pages rewritten in place are marked damaged (either CRC reads).
  void end_write(std::span<const planned_write> plan, bool ok);
  // Makes pages [first, end) read as zeros in the working epoch (blocks loaded). Never waits
  // for a barrier: it changes only DRAM; the homes are punched after its commit.
  void discard(std::uint64_t first, std::uint64_t end);
  // Sets a page's working version to `home`/`crc` (pages whose bytes the kernel-mmap backend
  // wrote into home 0 directly); the caller holds off commits.
  void adopt(std::uint64_t page, page_home home, std::uint32_t crc);

  // --- commit --------------------------------------------------------------------------------
  struct sealed_epoch {
    std::uint64_t epoch = 0;
    std::vector<std::uint64_t> blocks;  // the blocks it changed
  };
  // Ends the working epoch: waits until its batches have ended; its versions become sealed; new
  // writes belong to the next epoch. Only one epoch is sealed at a time (the commit lock).
  sealed_epoch seal();
  // What a commit of `s` writes into pheap.map: each changed block into the home its committed
  // copy does not use, then the directory into the home the current one (`dir_home`) does not
  // use.
  struct map_update {
    std::vector<std::byte> blocks;  // map_block_size bytes per changed block
    std::vector<std::uint64_t> offsets;
    std::vector<dir_entry> directory;
    std::vector<std::byte> directory_bytes;  // padded
    std::uint64_t directory_length = 0;
    std::uint32_t directory_crc = 0;
    unsigned directory_home = 0;
  };
  map_update encode(const sealed_epoch& s, unsigned dir_home) const;
  // Pages `s` freed (discarded, no data in its version): their homes are punched after `s`
  // is durable. Sorted.
  std::vector<std::uint64_t> freed(const sealed_epoch& s) const;
  // `s` is durable with directory `directory`: sealed versions become the committed ones and
  // the barriers drop.
  void publish(const sealed_epoch& s, const std::vector<dir_entry>& directory);
  // Wakes every waiting writer (after the store was poisoned: `check` then throws).
  void wake_all();

  // --- whole-map views -----------------------------------------------------------------------
  // Committed directory (under the lock: a commit may publish meanwhile).
  std::vector<dir_entry> committed_directory() const;
  // The committed version of block `b` (loaded by the caller), copied; all none if none.
  block_version committed_version(std::uint64_t b) const;
  // Pages whose newest version has data.
  std::uint64_t live_pages() const;
  // For pages [first, end) (blocks loaded): bit 0 set if some version (committed, sealed,
  // working) names home 0 of the page, bit 1 the same for home 1.
  void homes_in_use(std::uint64_t first, std::uint64_t end, std::vector<std::uint8_t>& out) const;
  // The epoch writes currently belong to.
  std::uint64_t working_epoch() const;
  // The epoch sealed by a running commit (from seal() to publish()), if any.
  std::optional<std::uint64_t> sealed_now() const;

 private:
  struct node;
  node* loaded(std::uint64_t b) const;
  void load_blocks(std::vector<std::uint64_t> blocks);
  node& working_node(std::uint64_t b);  // under mu_ (exclusive); creates the working version
  bool blocked(std::uint64_t page) const;  // under mu_

  io::engine& eng_;
  std::shared_ptr<io::file> file_;
  block_reader block_reader_;
  uuid id_;
  map_layout layout_;
  const std::vector<dir_entry> open_dir_;  // as of open: the truth for blocks never loaded

  std::mutex load_mu_;
  std::vector<std::unique_ptr<node>> nodes_;            // owned under load_mu_
  std::unique_ptr<std::atomic<node*>[]> published_;      // release-published pointers

  mutable std::shared_mutex mu_;
  std::condition_variable_any cv_;
  std::vector<dir_entry> dir_;  // committed directory (commit thread writes, under mu_)
  std::uint64_t working_epoch_;
  unsigned inflight_ = 0;
  bool sealing_ = false;
  bool sealed_active_ = false;
  std::vector<std::uint64_t> dirty_;  // blocks with a working version
  std::unordered_map<std::uint64_t, std::uint32_t> damaged_;  // page → CRC of the failed write
};

}  // namespace pheap::store
