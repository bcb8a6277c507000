// pheap/sparse_store.hpp — the page store under the pager.
//
// A SparseStore holds one region of `capacity` bytes, addressed in pages of `page_size`
// bytes, in a datastore directory (store format 3; byte layouts and every protocol:
// sparse_store/FORMAT.md):
//
//   DIR/pheap.super      two superblock slots (LMDB-style): the commit record
//   DIR/pheap.map        the page map: for every page where its copy is and its CRC32C, in
//                        copy-on-write map blocks under a directory (both with two homes)
//   DIR/segment-NNNNNN   data, `segment_size` bytes of pages each, every page with two homes
//                        (copy-on-write), plus an identity header; created by the first write
//                        into them, kept sparse (pages without data are holes)
//
// Durability model:
//   * commit(root) is the only unit of durability. It makes every write_pages()/discard()
//     since the previous commit durable atomically, stores `root` (a small blob: the heap's
//     root record) with it and returns the new epoch number. A page is written once per
//     epoch, to the home the last durable epoch does not use; the commit writes the changed
//     map blocks and the directory to their unused homes, syncs, and switches the superblock.
//   * After a crash at any point, open() yields exactly the state of the last completed
//     commit: never a mix of two epochs. Open reads the superblock and the directory only, so
//     it costs the same after a crash as after a clean close.
//   * Between commits, write_pages() may be called any number of times, rewriting the same
//     page repeatedly (in place: a page holds at most two homes on disk); read_pages() always
//     returns the newest content.
//   * A failed write or sync during write_pages()/commit() ends that epoch: the call throws,
//     the store becomes poisoned (later write_pages, discard, commit and snapshot throw
//     errc::poisoned naming the original cause) and the previous epoch stays the durable
//     state on disk. Reads keep working and return the newest successfully written content,
//     so a pager can keep serving faults after a full disk. Reopen to continue writing.
//   * A read racing a rewrite of the SAME page may fail its checksum or see either version
//     (the pager never issues both at once).
//   * Segment data goes through O_DIRECT (io::open_mode::direct): the caller's buffer is the
//     only cache. Page-aligned buffers avoid a bounce copy.
//
// Concurrency: all member functions are thread-safe. write_pages() may run concurrently with
// commit(); such a write lands in the committed epoch or the next, never torn within a page.
// A write of a page the running commit changed may wait until that commit is durable.
//
// Locking (format 4): one read-write opener per datastore (flock LOCK_EX on DIR/pheap.super;
// a second one throws errc::locked), and any number of read-only openers beside it: each
// registers the watermark it reads in DIR/pheap.readers and reads exactly that watermark for
// its whole life, while the writer keeps committing; the writer keeps a copy (DIR/pheap.pinned)
// of whatever it overwrites that a registered reader's watermark still names (FORMAT.md
// "Readers beside a writer"). Readers never block the writer; a writer blocks a reader only for
// a superblock read. Caveats:
//   * A read-only open without write access to pheap.readers (another user's datastore) takes
//     flock LOCK_SH instead, as format 3 did: no writer can open while it reads.
//   * The copies kept for readers are bounded by store_options::pin_limit (the table's, fixed
//     when the first process attaches): beyond it the writer expires the oldest reader, whose
//     next read throws errc::stale, never a wrong byte. A reader pins at most the pages changed
//     since its watermark.
//   * A format-3 datastore is read as before (LOCK_SH, no writer beside it); a read-write open
//     of it is errc::older_format: `pheap upgrade DIR` converts it in place (upgrade_in_place).
//   * The kernel-mmap backend cannot serve readers: a direct mapping is refused while readers
//     are attached, and readers are refused while a writer maps directly.
//
// Failure modes (all throw pheap::error naming the path and the cause):
//   missing directory → not_found; directory without pheap.super → not_a_datastore;
//   newer format version → newer_format; format 2 → older_format ("convert it with `pheap
//   upgrade SRC DST`", see upgrade()); format 1 → older_format;
//   both superblock slots invalid → corrupt (one invalid slot falls back to the other);
//   a directory or map block that fails its checksum in its parent (torn, stale, lost,
//   misdirected or another datastore's) → corrupt naming pheap.map, the block and its pages;
//   a segment a committed page lives in missing, truncated or of another datastore / index →
//   corrupt naming the file and the page; ENOSPC → no_space; any other OS failure → io.
//   read_pages() verifies every page against the map's CRC: a damaged page, or one rewritten
//   behind the map's back, is errc::corrupt naming the segment file and the page, never data.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "pheap/io.hpp"
#include "pheap/stats.hpp"

namespace pheap {

using uuid = std::array<std::uint8_t, 16>;
std::string to_string(const uuid& id);

struct store_options {
  // Creation parameters (ignored on open: the superblock's values win).
  std::uint64_t capacity = 0;               // bytes; multiple of page_size; > 0
  std::uint32_t page_size = 64 * 1024;      // power of two, 4 KiB .. 64 MiB
  std::uint64_t segment_size = 256ull << 20;  // power of two, multiple of page_size

  // Open parameters.
  bool read_only = false;  // never writes
  // Read-only stores: segment data is read through the kernel's page cache (buffered reads)
  // instead of O_DIRECT, so it stays in DRAM for the next process that reads it (at the
  // price of the page cache holding it beside the caller's buffer). Ignored by read-write
  // stores, which read and write O_DIRECT. Checksums are verified either way.
  bool page_cache_reads = false;
  std::shared_ptr<io::engine> engine;  // null → io::default_engine()
  // The highest epoch the caller accepts (two-phase commit, see prepare()): open picks the
  // newest durable epoch not above it. A read-write open that accepts a prepared epoch
  // confirms it. errc::corrupt if no durable epoch is at or below it.
  std::uint64_t max_epoch = ~std::uint64_t{0};
  // The most bytes of copies the writer keeps for readers of older watermarks (FORMAT.md
  // "Readers beside a writer"). Used by the process that creates the reader table (the first
  // to attach); later ones keep its value. Rounded down to 4 KiB; at most 16 TiB.
  std::uint64_t pin_limit = 4ull << 30;
  // Read-only opens register as readers beside a writer (above). false: take flock LOCK_SH
  // as format 3 did instead — no writer can open while this store is open — which a caller
  // that maps the segment files itself (direct_extents) needs.
  bool beside_writer = true;
};

// A read-only store moved to the newest watermark (sparse_store::refresh): the epoch it reads
// now, and the pages [first, end) whose copy may differ from the epoch it read before (every
// page of a map block it had not loaded counts as changed; a page with the same home and
// CRC32C in both epochs does not).
struct refresh_result {
  std::uint64_t epoch = 0;
  bool moved = false;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> changed;
};

// A process reading a datastore through its reader table (sparse_store::readers).
struct reader_info {
  std::uint64_t epoch = 0;          // the watermark it reads
  std::uint32_t pid = 0;
  std::uint64_t since_unix_ns = 0;  // when it registered that watermark
  bool expired = false;             // released by the writer: its next read throws stale
  std::uint64_t pinned_bytes = 0;   // copies the writer keeps for its watermark
};

// The last commit of a datastore as its superblock records it (sparse_store::peek).
struct store_peek {
  std::uint64_t epoch = 0;
  uuid id{};
  std::uint32_t format_version = 0;
  std::uint32_t page_size = 0;
  std::uint64_t capacity = 0;
  std::uint64_t segment_size = 0;
  std::vector<std::byte> root;      // root blob of that commit
  std::uint64_t disk_bytes = 0;     // allocated bytes of the directory's files, now
};

struct page_read {
  std::uint64_t page;  // page number < capacity / page_size
  void* buf;           // page_size bytes
};

struct page_write {
  std::uint64_t page;
  const void* buf;  // page_size bytes
};

// A piece of the region laid out in a file (see sparse_store::direct_extents).
struct direct_extent {
  std::shared_ptr<io::file> file;  // null: no file, the bytes are zeros
  std::uint64_t file_offset = 0;
  std::uint64_t region_offset = 0;
  std::uint64_t length = 0;
};

class sparse_store {
 public:
  // Creates DIR (must not exist, or be an empty directory) with an epoch-0 commit holding an
  // empty root. Throws already_exists / invalid_argument / io.
  static std::unique_ptr<sparse_store> create(const std::string& dir, const store_options& opt);
  // Opens DIR. Read-only opens never write.
  static std::unique_ptr<sparse_store> open(const std::string& dir, const store_options& opt);
  // Writes a format-3 copy of the format-2 datastore SRC at DST (must not exist): the same
  // geometry, every page that may hold data, the root, in one commit; built under a temporary
  // name and renamed into place like create(). SRC is opened read-only. Throws as open() for
  // SRC (invalid_argument if SRC is not format 2) and as create() for DST.
  static void upgrade(const std::string& src, const std::string& dst, const store_options& opt = {});
  // Converts the format-3 datastore DIR to format 4 in place (the layouts are the same: the
  // superblock's version is rewritten, the older slot first, each synced), holding its
  // exclusive lock. Returns false if DIR is format 4 already. Throws as open() does (locked
  // while anyone has DIR open; older_format for format 2: use upgrade(SRC, DST)).
  static bool upgrade_in_place(const std::string& dir, const store_options& opt = {});
  // The processes reading DIR through its reader table now (empty without one), without
  // registering or locking anything a writer or reader waits for.
  static std::vector<reader_info> readers(const std::string& dir, std::shared_ptr<io::engine> engine = nullptr);

  // Deletes the datastore DIR and every file in it, holding its exclusive lock meanwhile.
  // not_found if DIR does not exist; not_a_datastore if it has no superblock (nothing is
  // deleted); locked if another process has it open. A remove cut short (crash, I/O error)
  // leaves a damaged datastore that a second remove finishes.
  static void remove(const std::string& dir, const store_options& opt = {});

  // The last durable commit of DIR, read from the superblock alone and WITHOUT the lock: works
  // while a writer has DIR open (never blocks it, never writes). Reads nothing but the
  // superblock (see sparse_store/peek.cpp for why that is safe). Throws as open() does for a
  // missing directory, a foreign one or an unreadable superblock.
  static store_peek peek(const std::string& dir, std::shared_ptr<io::engine> engine = nullptr);

  // Closing does not commit: writes after the last commit are discarded (as after a crash).
  virtual ~sparse_store() = default;

  virtual void read_pages(std::span<const page_read> batch) = 0;
  virtual void write_pages(std::span<const page_write> batch) = 0;  // errc::read_only if RO
  // Zeroes [first_page, first_page + count) as of the next commit; disk space is released
  // (holes punched) once that commit is durable.
  virtual void discard(std::uint64_t first_page, std::uint64_t count) = 0;
  // True if the page may hold non-zero data (written in some committed or current epoch).
  // False means read_pages() would return zeros: the pager zero-fills without I/O.
  virtual bool may_have_data(std::uint64_t page) const = 0;
  // The CRC32C (pheap/crc32c.hpp) of what read_pages() would return for `page` now, without
  // reading the page: format 3 answers the page map's CRC of the page's newest copy (the one
  // read_pages() verifies against; it may load the page's map block, as may_have_data() does),
  // and for a page without data the CRC of page_size() zero bytes. std::nullopt when only a
  // read could tell (a page damaged by a failed in-place rewrite; a page beyond the capacity). The pager compares it with an eviction victim's bytes to judge
  // the victim clean without reading it back. Not meaningful for a page whose write_pages()
  // is in flight. Default: std::nullopt.
  virtual std::optional<std::uint32_t> page_crc(std::uint64_t page) const {
    (void)page;
    return std::nullopt;
  }
  // Checks every file a page with data lives in as a read of that page would (present, of its
  // full size, this datastore's), reading no page data: what an open leaves to the first read
  // of each file (opens read only the superblock and the map directory). Loads the map blocks
  // it needs to find one page with data per file (at most a few small reads per file).
  // Throws errc::corrupt naming the first damaged file, as that read would ("missing segment
  // file, required by page P of epoch E"), or the map block that cannot be loaded. `pheap
  // info` calls it so that a datastore missing a file does not look sound.
  virtual void check_files() = 0;

  // Makes everything written so far durable atomically with `root` (≤ max_root_size bytes).
  virtual std::uint64_t commit(std::span<const std::byte> root) = 0;
  // commit(root), unless nothing was written or discarded since the last commit and `root`
  // equals its root: then nothing is written and the last epoch is returned (a close with
  // nothing dirty leaves the datastore at the watermark the caller last saw). Default: commit.
  virtual std::uint64_t commit_if_changed(std::span<const std::byte> root) { return commit(root); }

  // Two-phase commit (a participant of a distributed commit). prepare(root) makes everything
  // written so far durable as epoch E+1 like commit(), but not yet the watermark: epoch()
  // stays E, and a later open picks E+1 only if the caller's store_options::max_epoch accepts
  // it (else E, whose pages no write has touched meanwhile). confirm() makes the prepared
  // epoch the watermark and returns it. While an epoch is prepared, writes continue (a write
  // of a page it changed waits for confirm(), as it would for a running commit), commit() and
  // prepare() throw invalid_argument, and closing leaves the decision to the next open.
  virtual std::uint64_t prepare(std::span<const std::byte> root) = 0;
  virtual std::uint64_t confirm() = 0;
  virtual bool prepared() const = 0;

  // Writes an independent datastore at `dst` (must not exist) holding exactly the state of
  // the last commit (reflink where supported, sparse copy otherwise). Writers may continue.
  virtual void snapshot(const std::string& dst) = 0;

  // --- direct mapping (the kernel-mmap heap backend maps the region's bytes MAP_SHARED) ---
  // The caller never sees a file name or an offset rule: it maps what direct_extents() lists.
  //
  // True when the last commit lives at the fixed file offsets direct_extents() describes, so
  // the region can be mapped as is (read-only opens need this; read-write opens get there with
  // prepare_direct_mapping()). Waits for background work of the last commit.
  virtual bool direct_mapping_possible() = 0;
  // Read-write: commits everything written so far with `root`, then makes that state live at
  // fixed file offsets, creates every file the region needs and commits `root` once more.
  // Afterwards direct_mapping_possible() is true and every extent has a file. Returns the
  // epoch. errc::read_only on a read-only store; a failure poisons.
  virtual std::uint64_t prepare_direct_mapping(std::span<const std::byte> root) = 0;
  // The region as extents of open files, in region order, covering [0, capacity()) without
  // gaps: region bytes [region_offset, +length) are the file's bytes [file_offset, +length).
  // `file` is null where no file exists (read-only opens: those bytes are zeros). Files are
  // open read-write on a read-write store. errc::unavailable (saying what to do) unless
  // direct_mapping_possible().
  virtual std::vector<direct_extent> direct_extents() = 0;
  // For a region whose files were changed through the mapping instead of write_pages(): makes
  // the store's own view (page checksums and which pages hold data) match the files' current
  // contents, then commits `root`. Reads every data page once. Call with no writer mapping the
  // files. Returns the epoch. errc::read_only on a read-only store; a failure poisons.
  virtual std::uint64_t finish_direct_mapping(std::span<const std::byte> root) = 0;

  // A read-only store registered as a reader: moves to the newest watermark (at or below
  // store_options::max_epoch) without closing, and says which pages may have changed. Blocks
  // its own reads meanwhile; pointers a caller derived from pages that changed are its own to
  // drop. errc::invalid_argument on a read-write store or a reader holding flock LOCK_SH
  // (format 3, no write access to pheap.readers).
  // Default (stores without readers beside a writer): errc::invalid_argument.
  virtual refresh_result refresh();
  // refresh() to the newest watermark at or below `max_epoch`, which becomes the store's
  // max_epoch for later refreshes (a reader of one rank of a distributed datastore moves to
  // the local epoch of the job's newer global watermark). errc::invalid_argument when
  // max_epoch is below the epoch it reads (a reader never moves back), and as refresh().
  virtual refresh_result refresh_to(std::uint64_t max_epoch);

  virtual std::uint64_t epoch() const = 0;  // last committed epoch
  virtual std::vector<std::byte> root() const = 0;  // root blob of the last commit
  virtual const std::string& path() const = 0;
  virtual const uuid& id() const = 0;
  virtual std::uint32_t page_size() const = 0;
  virtual std::uint64_t capacity() const = 0;
  virtual std::uint64_t segment_size() const = 0;
  virtual bool read_only() const = 0;
  virtual io::engine& engine() const = 0;
  // Counters since open, and the space the datastore uses (live_bytes, disk_bytes).
  virtual store_stats stats() const = 0;
  // Bytes allocated on disk by all files of the datastore.
  virtual std::uint64_t disk_bytes() const = 0;

  static constexpr std::size_t max_root_size = 2048;
  static constexpr std::uint32_t format_version = 4;
  // Format 3 (the same bytes, without readers beside a writer) is opened read-only.
  static constexpr std::uint32_t format3_version = 3;
};

// Creation in steps (sparse_store/FORMAT.md "Creation"), for a caller that must put content
// into a new datastore before it appears under its name — pheap::manager commits its heap
// root first, the graph layer an empty graph, pheap::mpi a datastore per rank and a manifest.
// sparse_store::create() is make() + write_store() + publish().
//
//   make(dst)       steps 1-2: `dst` checked (absent or an empty directory, else
//                   already_exists), leftovers of crashed creations of its name removed (only
//                   unlocked ones), a fresh creation directory ".<name>.creating-XXXXXX" made
//                   next to it and held LOCK_EX until this object is destroyed.
//   write_store()   step 3: an epoch-0 datastore written into path() itself (never built
//                   elsewhere and renamed over it: a flock is on an inode, and the creation
//                   directory's lock must stay on the directory that is published), durable,
//                   its datastore lock taken and held by this object.
//   open_store()    the store at path(), for the caller to fill and commit. It shares this
//                   object's datastore lock (holds none of its own); at most one at a time,
//                   and it must be destroyed before publish().
//   publish()       steps 4-5: rename to `dst`, fsync of the parent (the datastore taken back
//                   out if it fails). With write_store(): returns the store opened at `dst`,
//                   the datastore lock held from step 3 on, so nobody opens the datastore
//                   before the caller has it; without (a directory the caller filled, e.g.
//                   with datastores of its own): returns null.
//   take_back()     after publish(), when the caller cannot use what it published: renamed
//                   away and removed, the empty directory it replaced recreated (best effort).
// Destroying an unpublished creation removes its directory and everything in it; a process
// killed before publish() leaves a leftover that the next creation of the name removes.
class store_creation {
 public:
  static store_creation make(const std::string& dst, const char* op,
                             std::shared_ptr<io::engine> engine = nullptr);
  store_creation(store_creation&&) noexcept;
  store_creation& operator=(store_creation&&) noexcept;
  ~store_creation();

  const std::string& path() const;  // the creation directory
  void write_store(const store_options& opt);
  std::unique_ptr<sparse_store> open_store(const store_options& opt);
  std::unique_ptr<sparse_store> publish();
  void take_back() noexcept;

  struct state;

 private:
  explicit store_creation(std::unique_ptr<state> s);
  std::unique_ptr<state> s_;
};

}  // namespace pheap
