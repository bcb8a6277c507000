// sparse_store/reader_table.hpp — DIR/pheap.readers, the table through which readers and the
// writer of one datastore share it (FORMAT.md "Readers beside a writer"; LMDB's lock file is
// the model). It is coordination state, never datastore data: never synced, meaningless after
// a reboot, and reset by the first process that attaches while nobody else has it attached.
//
// What it holds (every field in the shared mapping, little-endian, naturally aligned):
//   header   the table's geometry (slots, buckets, entries, 4 KiB grains of pheap.pinned), the
//            datastore's uuid and page size, the FLOOR (the lowest epoch a reader may register
//            at), and counters
//   slots    one per reader: its state (free, active, expired), the epoch it reads and that
//            epoch's directory (home, CRC, length), the pid and the time it registered
//   pins     the writer's preserved copies: per copy its kind (a page, a map block or the
//            directory), its id (page or block number), the reader epochs [lo, hi] it was made
//            for and where in pheap.pinned it lies (a run of grains); chained in hash buckets
//            by (kind, id), each bucket with a sequence number that is odd while the writer
//            unlinks from its chain
//   grains   a bitmap of the 4 KiB grains of pheap.pinned in use
//
// Byte locks (shared_map.hpp, OFD locks on the file; never on the mapping's bytes):
//   byte 0        ATTACH: every attached process holds it shared; a process that gets it
//                 exclusively is alone and resets the table, then converts to shared
//   byte 1        MUTEX: held exclusively to claim or free a slot, and to exclude readers
//   byte 2        DIRECT: held exclusively by a kernel-mmap writer, which cannot serve readers
//   byte 3        REMOVING: held exclusively by remove() while it deletes the datastore
//   byte 64 + i   slot i's OWNER holds it exclusively for as long as it reads: a slot whose
//                 byte nobody holds belongs to a dead reader, whatever its state word says
//
// Who writes what: a reader writes only its own slot (and claims it under MUTEX); the writer
// (one per datastore: the datastore's flock) writes the floor, the pins, the grains, the
// counters and the state words of expired and dead readers' slots. Readers read the pins
// without a lock: an entry is filled before the store that links it into its bucket, and a
// reader that walked a chain while its bucket's sequence number moved walks it again.
//
// Caveats:
//   * The table's size is fixed when it is reset: a writer that attaches while readers are
//     attached keeps the pin limit they created it with (stats() reports the one in force).
//   * At most max_slots readers at once (errc::locked beyond that).
//   * A reader forked from another shares its slot's lock: the slot lives until both are gone.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pheap/io.hpp"
#include "pheap/sparse_store.hpp"
#include "shared_map.hpp"

namespace pheap::store {

enum class pin_kind : std::uint32_t { page = 1, block = 2, directory = 3 };

// What an active slot says: the epoch a reader reads and that epoch's page-map directory.
struct reader_epoch {
  std::uint64_t epoch = 0;
  std::uint64_t dir_length = 0;
  std::uint32_t dir_home = 0;
  std::uint32_t dir_crc = 0;
  bool operator==(const reader_epoch&) const = default;
};

// A preserved copy: `grains` grains of pheap.pinned from grain `first`, and (while the writer
// holds it between allocate() and insert()) the table entry reserved for its pin.
struct pinned_run {
  std::uint64_t first = 0;
  std::uint32_t grains = 0;
  std::uint32_t entry = 0;
};

using reader_record = reader_info;

class reader_table {
 public:
  static constexpr std::uint64_t grain = 4096;
  static constexpr std::uint32_t max_slots = 510;
  // Why a slot was expired (FORMAT.md): the pins needed beyond the limit, or a pin failed.
  enum class expiry : std::uint32_t { none = 0, limit = 1, pin_failed = 2 };

  struct geometry {
    std::uint32_t page_size = 0;
    uuid id{};
    std::uint64_t pin_limit = 0;  // bytes of pheap.pinned at most (rounded down to grains)
  };

  // Opens DIR/pheap.readers read-write (created if missing) and attaches: the table is reset
  // (to `g`) when no other process has it attached or when it is not a table of this
  // datastore, else joined as it is. nullptr when the file cannot be opened for writing here
  // (EACCES, EPERM, EROFS): the caller keeps the exclusive protocol. Other failures throw.
  static std::unique_ptr<reader_table> attach(io::engine& eng, const std::string& dir,
                                              const geometry& g);
  // The live readers of DIR's table without attaching as a reader (pheap info): empty if there
  // is no table. Takes the ATTACH byte shared while it reads (a reset cannot truncate it).
  static std::vector<reader_record> list(io::engine& eng, const std::string& dir, const uuid& id);
  ~reader_table();

  const std::string& path() const { return path_; }
  std::uint64_t limit_bytes() const;

  // --- a reader ------------------------------------------------------------------------------
  // Claims a free slot (or a dead reader's) and holds its OWNER byte. errc::locked naming the
  // datastore if every slot is live, while remove() deletes it, or while a kernel-mmap writer
  // maps it (`op` names the caller).
  int claim(const std::string& dir, const char* op);
  // Sets the slot's epoch and makes it active, then a full fence: after it, the writer's next
  // scan sees the slot, or this reader sees the floor the writer raised before its scan.
  void publish(int slot, const reader_epoch& e);
  std::uint64_t floor() const;
  expiry expired(int slot) const;  // acquire
  // Frees the slot (state free, OWNER byte released).
  void release(int slot) noexcept;

  // --- lookups (readers, and the writer's views of reader epochs) ----------------------------
  // The preserved copy of (kind, id) made for an epoch range holding `epoch`, if any.
  std::optional<pinned_run> find(pin_kind kind, std::uint64_t id, std::uint64_t epoch) const;

  // --- the writer ----------------------------------------------------------------------------
  // Raises the floor to `e` (never lowers it), then a full fence (see publish()).
  void raise_floor(std::uint64_t e);
  // The distinct epochs of the active slots (expired ones excluded), ascending.
  std::vector<reader_epoch> active_epochs() const;
  // Slots whose OWNER byte nobody holds become free; then, if the active epochs changed since
  // the last call, every pin no active epoch lies in is unlinked and its grains freed. Returns
  // the freed runs (the caller punches them out of pheap.pinned).
  std::vector<pinned_run> reap();
  // Grains for a copy of `bytes` and an entry for its pin; nullopt when the limit leaves no
  // such run. errc::no_space when the entry's bytes of the table cannot be allocated.
  std::optional<pinned_run> allocate(std::uint64_t bytes);
  // Gives back an allocated run that was not inserted (its grains and its entry).
  void free_run(const pinned_run& r);
  // Links the pin of an allocated run for epochs [lo, hi] (its copy is written and visible).
  void insert(pin_kind kind, std::uint64_t id, std::uint64_t lo, std::uint64_t hi,
              const pinned_run& r);
  // Marks every active slot at `epoch` expired, then a full fence; returns how many.
  std::uint32_t expire(std::uint64_t epoch, expiry why);
  // Keeps readers out — a kernel-mmap writer's direct mapping, or remove() — from now until
  // admit() or the process's death: under MUTEX, errc::locked naming the attached readers if
  // there is one, else the byte is held (claims check it).
  enum class exclusion : std::uint32_t { direct = 2, removing = 3 };
  void exclude(exclusion why, const std::string& dir, const char* op);
  void admit(exclusion why) noexcept;
  // Readers attached now (slots whose owner is alive), for messages and stats.
  std::vector<reader_record> readers() const;
  // The floor set exactly (a writer that opened below it: the readers above are expired).
  void set_floor(std::uint64_t e);
  // A writer taking over from one that died: the grain bitmap, its count and the stack of free
  // entries rebuilt from the pins (a writer killed between allocating grains and linking
  // their pin, or mid-push, left them inconsistent). Pins and chains are left as they are.
  void adopt_writer_state();

  struct counters {
    std::uint64_t pinned_bytes = 0;  // grains in use × grain
    std::uint64_t pins = 0;          // pins made since the table was reset
    std::uint64_t expired = 0;       // slots expired since the table was reset
  };
  counters stats() const;

  struct layout;

 private:
  class mutex_hold;
  reader_table(std::unique_ptr<io::file> f, std::string path, std::string dir);
  void reset(io::engine& eng, const geometry& g);
  void map_and_check(const geometry& g, bool writable);
  std::uint64_t pinned_bytes_for(std::uint64_t epoch) const;
  void free_bits(const pinned_run& r);
  bool reserve_entry(std::uint32_t& x);
  std::uint32_t claimed() const;
  std::byte* slot(std::uint32_t i) const;
  std::byte* bucket(std::uint32_t b) const;
  std::byte* entry(std::uint32_t e) const;

  std::unique_ptr<io::file> file_;
  std::string path_;
  std::string dir_;
  std::set<std::uint32_t> owned_;          // the slots this object claimed
  os::shared_map map_;
  std::unique_ptr<layout> lay_;
  std::vector<reader_epoch> last_reaped_;  // the writer's: active epochs at the last reap
  mutable std::mutex mu_;                  // this process's writer-side mutations
};

}  // namespace pheap::store
