// The global manifest (FORMAT.md "Manifest"): encoding, the checked read that picks the newer
// sound slot, the two writes, and the single-process read-only open of every rank.
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>

#include "mpi/manifest_io.hpp"
#include "pheap/crc32c.hpp"
#include "pheap/error.hpp"
#include "pheap/io.hpp"
#include "pheap/two_phase.hpp"

namespace pheap::mpi {

namespace {

constexpr char magic[8] = {'P', 'H', 'E', 'A', 'P', 'M', 'P', 'I'};
constexpr std::size_t header_bytes = 64, entry_bytes = 24;
constexpr std::uint32_t max_ranks = 1u << 24;

void put64(std::byte* p, std::uint64_t v) { std::memcpy(p, &v, 8); }  // little-endian hosts
void put32(std::byte* p, std::uint32_t v) { std::memcpy(p, &v, 4); }
std::uint64_t get64(const std::byte* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
std::uint32_t get32(const std::byte* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

std::string manifest_path(const std::string& path) { return path + "/" + manifest_file; }

// One slot as read: sound (magic, format, checksum, geometry) or why not.
struct slot_read {
  bool has_magic = false;
  bool sound = false;
  std::uint32_t format = 0;
  manifest m;
  std::string problem;
};

slot_read decode_slot(const std::byte* p, std::size_t size) {
  slot_read s;
  if (size < header_bytes + 4) {
    s.problem = "truncated";
    return s;
  }
  s.has_magic = std::memcmp(p, magic, sizeof magic) == 0;
  if (!s.has_magic) {
    s.problem = "no manifest magic";
    return s;
  }
  s.format = get32(p + 8);
  const std::uint32_t n = get32(p + 12);
  const std::uint64_t slot = get64(p + 40);
  if (n == 0 || n > max_ranks || slot != size || slot < detail::slot_size(n)) {
    s.problem = "impossible geometry (" + std::to_string(n) + " ranks, slot " + std::to_string(slot) + ")";
    return s;
  }
  const std::size_t body = header_bytes + entry_bytes * n;
  if (crc32c(p, body) != get32(p + body)) {
    s.problem = "checksum mismatch";
    return s;
  }
  s.m.epoch = get64(p + 16);
  std::memcpy(s.m.job.data(), p + 24, 16);
  s.m.ranks.resize(n);
  for (std::uint32_t r = 0; r < n; ++r) {
    const std::byte* e = p + header_bytes + entry_bytes * r;
    s.m.ranks[r].epoch = get64(e);
    std::memcpy(s.m.ranks[r].id.data(), e + 8, 16);
  }
  s.sound = true;
  return s;
}

// The whole manifest file, through the engine (every byte of a datastore goes through one:
// pheap/io.hpp; the fault engine of the campaigns reaches the manifest too).
std::vector<std::byte> read_file(io::engine& eng, const std::string& file, const std::string& path) {
  std::unique_ptr<io::file> f;
  try {
    f = eng.open(file, io::open_mode::read_only);
  } catch (const error& e) {
    if (e.code() != errc::not_found) throw;
    throw error(errc::not_found, path, "open distributed datastore",
                eng.exists(path)
                    ? std::string("no ") + manifest_file + " (not a distributed datastore, or its creation was interrupted)"
                    : "no such directory");
  }
  std::vector<std::byte> bytes(eng.size(*f));
  eng.read_at(*f, 0, bytes.data(), bytes.size());
  return bytes;
}

}  // namespace

namespace detail {

std::size_t slot_size(std::size_t ranks) {
  const std::size_t raw = header_bytes + entry_bytes * ranks + 4;
  return (raw + 4095) / 4096 * 4096;
}

std::vector<std::byte> encode_slot(const manifest& m) {
  const std::size_t n = m.ranks.size(), size = slot_size(n);
  std::vector<std::byte> s(size);
  std::memcpy(s.data(), magic, sizeof magic);
  put32(s.data() + 8, manifest_format);
  put32(s.data() + 12, static_cast<std::uint32_t>(n));
  put64(s.data() + 16, m.epoch);
  std::memcpy(s.data() + 24, m.job.data(), 16);
  put64(s.data() + 40, size);
  for (std::size_t r = 0; r < n; ++r) {
    std::byte* e = s.data() + header_bytes + entry_bytes * r;
    put64(e, m.ranks[r].epoch);
    std::memcpy(e + 8, m.ranks[r].id.data(), 16);
  }
  const std::size_t body = header_bytes + entry_bytes * n;
  put32(s.data() + body, crc32c(s.data(), body));
  return s;
}

void create_manifest(io::engine& eng, const std::string& path, const manifest& m) {
  const std::string file = manifest_path(path);
  const std::vector<std::byte> slot = encode_slot(m);
  std::vector<std::byte> whole(2 * slot.size());
  std::memcpy(whole.data() + (m.epoch % 2) * slot.size(), slot.data(), slot.size());
  {
    auto f = eng.open(file, io::open_mode::create_new);  // O_EXCL
    eng.write_at(*f, 0, whole.data(), whole.size());
    eng.sync(*f);
  }
  eng.sync_dir(path);  // the name
}

void commit_manifest(io::engine& eng, const std::string& path, const manifest& m) {
  const std::string file = manifest_path(path);
  const std::vector<std::byte> slot = encode_slot(m);
  auto f = eng.open(file, io::open_mode::read_write);
  eng.write_at(*f, (m.epoch % 2) * slot.size(), slot.data(), slot.size());
  eng.sync(*f);  // the commit point
}

void remove_manifest(io::engine& eng, const std::string& path) { eng.remove_file(manifest_path(path)); }

std::shared_ptr<io::engine> engine_of(const options& opt) {
  return opt.engine ? opt.engine : io::default_engine();
}

uuid new_uuid() {
  std::random_device rd;  // /dev/urandom
  uuid id;
  for (auto& b : id) b = static_cast<std::uint8_t>(rd());
  id[6] = static_cast<std::uint8_t>((id[6] & 0x0f) | 0x40);  // RFC 4122 version 4
  id[8] = static_cast<std::uint8_t>((id[8] & 0x3f) | 0x80);
  return id;
}

uuid parse_uuid(const std::string& text, const std::string& path) {
  uuid id{};
  std::size_t k = 0;
  for (std::size_t i = 0; i < text.size() && k < 32; ++i) {
    const char c = text[i];
    if (c == '-') continue;
    int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (v < 0) break;
    id[k / 2] = static_cast<std::uint8_t>(id[k / 2] | (v << (k % 2 ? 0 : 4)));
    ++k;
  }
  if (k != 32) throw error(errc::corrupt, path, "read uuid", "malformed uuid '" + text + "'");
  return id;
}

}  // namespace detail

std::string rank_dir(const std::string& path, int rank) {
  char name[32];
  std::snprintf(name, sizeof name, "/rank-%05d", rank);
  return path + name;
}

manifest read_manifest(const std::string& path, std::shared_ptr<io::engine> engine) {
  const std::string file = manifest_path(path);
  const std::vector<std::byte> bytes = read_file(engine ? *engine : *io::default_engine(), file, path);
  // create_manifest() makes the file, then writes and syncs it: a crash in between leaves it
  // empty or zero-filled, which is an interrupted creation, not a foreign file.
  if (std::all_of(bytes.begin(), bytes.end(), [](std::byte b) { return b == std::byte{0}; })) {
    throw error(errc::not_found, path, "open distributed datastore",
                std::string(manifest_file) + " is empty (" + std::to_string(bytes.size()) +
                    " zero bytes): the datastore's creation was interrupted");
  }
  const std::size_t half = bytes.size() / 2;
  const slot_read a = decode_slot(bytes.data(), half), b = decode_slot(bytes.data() + half, half);
  if (!a.has_magic && !b.has_magic) {
    throw error(errc::not_a_datastore, file, "read manifest",
                "not a pheap distributed manifest (" + std::to_string(bytes.size()) +
                    " bytes, no magic in either slot)");
  }
  for (const slot_read* s : {&a, &b}) {
    if (s->sound && s->format > manifest_format) {
      throw error(errc::newer_format, file, "read manifest",
                  "manifest format " + std::to_string(s->format) + " (this build reads " +
                      std::to_string(manifest_format) + ")");
    }
  }
  if (!a.sound && !b.sound) {
    throw error(errc::corrupt, file, "read manifest",
                "both slots are damaged (slot 0: " + a.problem + "; slot 1: " + b.problem + ")");
  }
  const slot_read& pick = !b.sound || (a.sound && a.m.epoch > b.m.epoch) ? a : b;
  const std::size_t index = &pick == &a ? 0 : 1;
  if (pick.m.epoch % 2 != index) {
    throw error(errc::corrupt, file, "read manifest",
                "global epoch " + std::to_string(pick.m.epoch) + " found in slot " + std::to_string(index));
  }
  return pick.m;
}

manager open_rank(const std::string& path, const manifest& man, int rank, bool read_only, const options& opt) {
  const std::string dir = rank_dir(path, rank);
  if (!detail::engine_of(opt)->exists(dir)) {
    throw error(errc::not_found, dir, "open rank " + std::to_string(rank),
                "the rank's datastore directory is missing (the manifest lists " +
                    std::to_string(man.ranks.size()) + " ranks)");
  }
  const rank_entry& want = man.ranks.at(static_cast<std::size_t>(rank));
  const std::string found = manager::peek(dir).uuid;  // lock-free: opens nothing of a foreign job
  if (detail::parse_uuid(found, dir) != want.id) {
    throw error(errc::not_a_datastore, dir, "open rank " + std::to_string(rank),
                "belongs to another job: its uuid is " + found + ", the manifest expects " + to_string(want.id));
  }
  manager m = two_phase::open(dir, want.epoch, read_only, opt);
  if (m.epoch() != want.epoch) {
    throw error(errc::corrupt, dir, "open rank " + std::to_string(rank),
                "opened at local epoch " + std::to_string(m.epoch()) + ", the manifest's global epoch " +
                    std::to_string(man.epoch) + " needs local epoch " + std::to_string(want.epoch));
  }
  return m;
}

namespace detail {
bool manifest_moved(const std::string& path, const std::shared_ptr<io::engine>& eng, std::uint64_t epoch) {
  try {
    return read_manifest(path, eng).epoch > epoch;
  } catch (const error&) {
    return false;
  }
}

void throw_outpaced(const std::string& path, std::uint64_t first, std::uint64_t last, const char* op) {
  throw error(errc::stale, path, op,
              "the job committed global epochs " + std::to_string(first) + " to " + std::to_string(last) +
                  " while this reader tried " + std::to_string(reader_open_attempts) +
                  " times to reach one: every rank at one global epoch could not be registered before some "
                  "rank moved past it; open again, or flush less often");
}
}  // namespace detail

// Beside a running job (FORMAT.md "Readers beside a running job"): every rank is registered
// at the manifest's local epoch as a reader of its datastore, which keeps that epoch's bytes
// for as long as the view is open. A rank that confirmed a newer global epoch meanwhile no
// longer offers the old one (its open fails: stale, or no epoch at or below the one asked
// for); then the manifest names a newer global epoch, and every rank is opened at that one.
distributed_view open_read_only(const std::string& path, const options& opt) {
  std::uint64_t first = 0;
  for (int attempt = 1;; ++attempt) {
    distributed_view v;
    v.path = path;
    v.engine = opt.engine;
    v.man = read_manifest(path, opt.engine);
    if (attempt == 1) first = v.man.epoch;
    try {
      v.ranks.reserve(v.man.ranks.size());
      for (std::size_t r = 0; r < v.man.ranks.size(); ++r) {
        v.ranks.push_back(open_rank(path, v.man, static_cast<int>(r), true, opt));
      }
      return v;
    } catch (const error&) {
      if (!detail::manifest_moved(path, opt.engine, v.man.epoch)) throw;  // not the job's progress
      if (attempt == detail::reader_open_attempts) detail::throw_outpaced(path, first, v.man.epoch);
    }  // the ranks opened so far are closed here (their reader slots released)
  }
}

// A view moved to the newest global watermark (FORMAT.md "Readers beside a running job",
// "Refresh"): every rank moved to the local epoch the newer manifest names for it, each by a
// reader's refresh (two_phase::refresh: registered at the new epoch before the old one is
// released, pages whose copy did not change kept). A rank's refresh fails when the job
// confirmed a still newer global epoch meanwhile; then the manifest is read again and every
// rank moves to that one (the ranks moved already move again). Any other failure after a rank
// moved leaves ranks at different global epochs: the view is emptied (its ranks closed) and
// the error is thrown; a failure before any rank moved leaves the view as it was.
std::uint64_t refresh(distributed_view& v) {
  if (v.ranks.empty() || v.ranks.size() != v.man.ranks.size()) {
    throw error(errc::invalid_argument, v.path, "refresh",
                "this view holds no ranks (a refresh failed on it, or it was never opened): open the "
                "distributed datastore again");
  }
  const std::uint64_t first = v.man.epoch;
  bool torn = false;  // some rank reads another global epoch than v.man's
  for (int attempt = 1;; ++attempt) {
    manifest next;
    try {
      next = read_manifest(v.path, v.engine);
      if (next.job != v.man.job || next.ranks.size() != v.man.ranks.size() || next.epoch < v.man.epoch) {
        throw error(errc::not_a_datastore, v.path, "refresh",
                    "the manifest now names another job (" + std::to_string(next.ranks.size()) +
                        " ranks, global epoch " + std::to_string(next.epoch) + "; this view read " +
                        std::to_string(v.man.ranks.size()) + " ranks at global epoch " +
                        std::to_string(v.man.epoch) + "): the distributed datastore was replaced");
      }
      if (next.epoch == v.man.epoch) return next.epoch;
      for (std::size_t r = 0; r < v.ranks.size(); ++r) {
        const std::uint64_t want = next.ranks[r].epoch;
        const std::uint64_t got = two_phase::refresh(v.ranks[r], want);
        if (got != v.man.ranks[r].epoch) torn = true;
        if (got != want) {
          throw error(errc::corrupt, rank_dir(v.path, static_cast<int>(r)), "refresh",
                      "global epoch " + std::to_string(next.epoch) + " names local epoch " + std::to_string(want) +
                          ", but the newest epoch at or below it is " + std::to_string(got));
        }
      }
      v.man = std::move(next);
      return v.man.epoch;
    } catch (const error&) {
      const bool moved = next.epoch != 0 && detail::manifest_moved(v.path, v.engine, next.epoch);
      if (moved && attempt < detail::reader_open_attempts) continue;
      if (torn) v.ranks.clear();  // ranks at different global epochs: nothing to read consistently
      if (moved) detail::throw_outpaced(v.path, first, next.epoch, "refresh");
      throw;
    }
  }
}

}  // namespace pheap::mpi
