#include "segment_set.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <unordered_set>

#include "pheap/crc32c.hpp"
#include "pheap/error.hpp"
#include "journal.hpp"
#include "layout.hpp"

namespace pheap::store {

namespace {

// Bytes of page images a checkpoint moves per engine call (one read batch, one write batch).
constexpr std::size_t checkpoint_chunk = 16u << 20;
constexpr std::size_t table_block = 4096;
constexpr std::size_t entries_per_block = table_block / 4;

// Header layout (FORMAT.md "Segments"), at offset segment_size of the segment file.
constexpr std::size_t hdr_version = 8, hdr_page_size = 12, hdr_uuid = 16, hdr_index = 32,
                      hdr_segment_size = 40, hdr_touch_epoch = 48,
                      hdr_crc = segment_header_size - 4;

// Calls fn(first_page, end_page) for every run of pages of `f` (page size `ps`) below
// `limit` bytes that overlaps a data extent (SEEK_DATA / SEEK_HOLE: proportional to the number
// of extents, not to the size). `op` names the caller in errors.
template <class Fn>
void for_each_data_run(const io::file& f, std::uint64_t limit, std::uint32_t ps, const char* op,
                       Fn&& fn) {
  const int fd = f.fd();
  off_t pos = 0;
  while (static_cast<std::uint64_t>(pos) < limit) {
    const off_t data = ::lseek(fd, pos, SEEK_DATA);
    if (data < 0) {
      if (errno == ENXIO) break;  // no data past pos
      throw_errno(errno, f.path(), std::string(op) + " (SEEK_DATA)");
    }
    // The trailer (header slots and CRC table) is data too, but holds no pages.
    if (static_cast<std::uint64_t>(data) >= limit) break;
    off_t hole = ::lseek(fd, data, SEEK_HOLE);
    if (hole < 0) throw_errno(errno, f.path(), std::string(op) + " (SEEK_HOLE)");
    hole = std::min<off_t>(hole, static_cast<off_t>(limit));
    fn(static_cast<std::uint64_t>(data) / ps, (static_cast<std::uint64_t>(hole) + ps - 1) / ps);
    pos = hole;
  }
}

bool all_zero(const void* p, std::size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  return n == 0 || (b[0] == 0 && std::memcmp(b, b + 1, n - 1) == 0);
}

}  // namespace

void encode_segment_header(std::byte* out, const segment_header& h) {
  std::memset(out, 0, segment_header_size);
  std::memcpy(out, segment_magic, sizeof segment_magic);
  put<std::uint32_t>(out, hdr_version, h.version);
  put<std::uint32_t>(out, hdr_page_size, h.page_size);
  std::memcpy(out + hdr_uuid, h.id.data(), h.id.size());
  put<std::uint64_t>(out, hdr_index, h.index);
  put<std::uint64_t>(out, hdr_segment_size, h.segment_size);
  put<std::uint64_t>(out, hdr_touch_epoch, h.touch_epoch);
  put<std::uint32_t>(out, hdr_crc, crc32c(out, hdr_crc));
}

std::string decode_segment_header(const std::byte* in, segment_header& h) {
  if (std::memcmp(in, segment_magic, sizeof segment_magic) != 0) {
    return all_zero(in, segment_header_size) ? "no segment header (all zeros)"
                                             : "bad segment header magic";
  }
  const auto stored = get<std::uint32_t>(in, hdr_crc);
  const auto actual = crc32c(in, hdr_crc);
  if (stored != actual) {
    char msg[80];
    std::snprintf(msg, sizeof msg, "segment header crc mismatch (stored %08x, computed %08x)",
                  stored, actual);
    return msg;
  }
  h.version = get<std::uint32_t>(in, hdr_version);
  h.page_size = get<std::uint32_t>(in, hdr_page_size);
  std::memcpy(h.id.data(), in + hdr_uuid, h.id.size());
  h.index = get<std::uint64_t>(in, hdr_index);
  h.segment_size = get<std::uint64_t>(in, hdr_segment_size);
  h.touch_epoch = get<std::uint64_t>(in, hdr_touch_epoch);
  if (h.version != sparse_store::format_version) {
    return "segment header of format version " + std::to_string(h.version);
  }
  return {};
}

segment_set::segment_set(io::engine& eng, std::string dir, const uuid& id,
                         std::uint32_t page_size, std::uint64_t segment_size,
                         std::uint64_t segment_count, bool read_only)
    : eng_(eng),
      dir_(std::move(dir)),
      id_(id),
      page_size_(page_size),
      segment_size_(segment_size),
      pages_per_segment_(segment_size / page_size),
      file_size_(segment_file_size(segment_size, page_size)),
      read_only_(read_only),
      files_(segment_count),
      tables_(segment_count),
      table_ptrs_(std::make_unique<std::atomic<crc_table*>[]>(segment_count)),
      slot_epochs_(segment_count, {-1, -1}),
      touch_(segment_count, 0) {}

std::string segment_set::path_of(std::uint64_t index) const {
  return join(dir_, segment_name(index));
}

segment_header segment_set::header_for(std::uint64_t index, std::uint64_t epoch) const {
  segment_header h;
  h.page_size = page_size_;
  h.id = id_;
  h.index = index;
  h.segment_size = segment_size_;
  h.touch_epoch = epoch;
  return h;
}

segment_set::header_state segment_set::read_headers(io::file& f, std::uint64_t index) {
  std::vector<std::byte> buf(segment_header_slots * segment_header_size);
  eng_.read_at(f, segment_size_, buf.data(), buf.size());  // past EOF reads as zeros
  header_state st;
  std::string why[segment_header_slots];
  bool any = false;
  for (std::size_t k = 0; k < segment_header_slots; ++k) {
    segment_header h;
    why[k] = decode_segment_header(buf.data() + k * segment_header_size, h);
    if (!why[k].empty()) continue;
    if (h.id != id_) {
      why[k] = "segment belongs to datastore " + to_string(h.id) + ", not " + to_string(id_) +
               " (swapped in from another datastore)";
    } else if (h.index != index) {
      why[k] = "segment header names segment " + std::to_string(h.index) +
               " (a segment file renamed or copied over another)";
    } else if (h.page_size != page_size_ || h.segment_size != segment_size_) {
      why[k] = "segment header geometry (page_size " + std::to_string(h.page_size) +
               ", segment_size " + std::to_string(h.segment_size) +
               ") differs from the superblock's";
    } else if (h.touch_epoch > static_cast<std::uint64_t>(INT64_MAX)) {
      why[k] = "impossible touch epoch " + std::to_string(h.touch_epoch);
    } else {
      st.epoch[k] = static_cast<std::int64_t>(h.touch_epoch);
      any = true;
      continue;
    }
    st.foreign = true;  // a valid header that is not ours: never trust the other slot
    st.problem = why[k];
  }
  if (!st.foreign && !any) {
    st.problem = "no valid segment header (slot 0: " + why[0] + "; slot 1: " + why[1] + ")";
  }
  return st;
}

void segment_set::write_touch(io::file& f, std::uint64_t index, std::uint64_t epoch) {
  auto& e = slot_epochs_[index];
  const auto want = static_cast<std::int64_t>(epoch);
  std::size_t k;
  if (e[0] == want) {
    k = 0;
  } else if (e[1] == want) {
    k = 1;
  } else {
    k = e[0] > e[1] ? 1 : 0;  // keep the newest (the previous touch) intact
  }
  std::vector<std::byte> hdr(segment_header_size);
  encode_segment_header(hdr.data(), header_for(index, epoch));
  eng_.write_at(f, segment_size_ + k * segment_header_size, hdr.data(), hdr.size());
  e[k] = want;
  touch_[index] = epoch;
}

std::uint32_t segment_set::digest() const {
  std::shared_lock lk(mu_);
  std::vector<std::uint64_t> v;
  for (std::uint64_t i = 0; i < files_.size(); ++i) {
    if (!files_[i]) continue;
    v.push_back(i);
    v.push_back(touch_[i]);
  }
  return v.empty() ? 0 : crc32c(v.data(), v.size() * sizeof(std::uint64_t));
}

void segment_set::open_existing(const superblock& sb, const std::vector<std::string>& names) {
  std::unordered_set<std::uint64_t> listed;
  for (const auto& n : names) {
    if (auto i = parse_segment_name(n); i && *i < files_.size()) listed.insert(*i);
  }
  const auto mode = read_only_ ? io::open_mode::read_only : io::open_mode::read_write;
  const auto S = static_cast<std::int64_t>(sb.epoch);
  bool adopted = false;
  std::vector<std::uint64_t> touched_by_replay;
  std::unique_lock lk(mu_);
  for (std::uint64_t i = 0; i < files_.size(); ++i) {
    const bool declared = i < sb.segments.size() && sb.segments[i];
    const std::string path = path_of(i);
    if (declared) {
      if (!listed.count(i)) {
        throw error(errc::corrupt, path, "open",
                    "missing segment file required by epoch " + std::to_string(sb.epoch));
      }
      std::shared_ptr<io::file> f = eng_.open(path, mode);
      const std::uint64_t size = eng_.size(*f);
      if (size != file_size_) {
        throw error(errc::corrupt, path, "open",
                    "segment file has " + std::to_string(size) + " bytes, expected " +
                        std::to_string(file_size_) + " (truncated or foreign)");
      }
      header_state h = read_headers(*f, i);
      if (!h.problem.empty()) throw error(errc::corrupt, path, "open", h.problem);
      std::int64_t last = -1;
      for (std::int64_t e : h.epoch) {
        if (e > S) {
          throw error(errc::corrupt, path, "open",
                      "segment was written by the checkpoint of epoch " + std::to_string(e) +
                          ", after the committed epoch " + std::to_string(sb.epoch) +
                          " (a copy from a newer state of the datastore)");
        }
        // e == S with a journal: the (maybe cut-short) checkpoint of S's own journal, which
        // recovery replays; without one there is no such checkpoint and e == S is a snapshot
        // taken after the checkpoint of S.
        if (e < S || (e == S && sb.journal_length == 0)) last = std::max(last, e);
      }
      if (last < 0) {
        throw error(errc::corrupt, path, "open",
                    "segment header has no checkpoint before epoch " + std::to_string(sb.epoch));
      }
      slot_epochs_[i] = {h.epoch[0], h.epoch[1]};
      touch_[i] = static_cast<std::uint64_t>(last);
      if (!read_only_ && sb.journal_length > 0 && (h.epoch[0] == S || h.epoch[1] == S)) {
        touched_by_replay.push_back(i);
      }
      files_[i] = std::move(f);
    } else if (listed.count(i) && !read_only_) {
      // Created by the checkpoint of epoch S and cut short: its header holds S or is torn.
      std::shared_ptr<io::file> f = eng_.open(path, mode);
      header_state h = read_headers(*f, i);
      if (h.foreign) {
        throw error(errc::corrupt, path, "open",
                    h.problem + "; the file is not declared by epoch " +
                        std::to_string(sb.epoch) + " and is not this datastore's: move it away");
      }
      slot_epochs_[i] = {h.epoch[0], h.epoch[1]};
      write_touch(*f, i, sb.epoch);
      if (eng_.size(*f) != file_size_) eng_.truncate(*f, file_size_);
      eng_.sync(*f);
      files_[i] = std::move(f);
      adopted = true;
    }
  }
  if (adopted) eng_.sync_dir(dir_);

  // The digest covers the declared segments only (adopted ones are not in sb yet).
  std::vector<std::uint64_t> v;
  for (std::uint64_t i = 0; i < files_.size(); ++i) {
    if (i < sb.segments.size() && sb.segments[i]) {
      v.push_back(i);
      v.push_back(touch_[i]);
    }
  }
  const std::uint32_t d = v.empty() ? 0 : crc32c(v.data(), v.size() * sizeof(std::uint64_t));
  if (d != sb.segment_digest) {
    std::string list;
    for (std::size_t k = 0; k < v.size() && k < 32; k += 2) {
      list += (list.empty() ? "" : ", ") + segment_name(v[k]) + " at " + std::to_string(v[k + 1]);
    }
    if (v.size() > 32) list += ", ...";
    throw error(errc::corrupt, dir_, "open",
                "the segments' checkpoint epochs (" + list +
                    ") do not match the commit record of epoch " + std::to_string(sb.epoch) +
                    ": a segment file was replaced by an older or newer copy of itself");
  }
  // The cut-short checkpoint of journal S wrote into these segments (a header slot says S);
  // the read-write recovery replays journal S, after which they hold epoch S whether or not
  // the replay writes into them again (a discarded range whose hole the cut-short checkpoint
  // already punched is no longer in the replay's index). Their last touch is S from now on,
  // which is what their header says: the next commit's digest must agree with it.
  for (std::uint64_t i : touched_by_replay) touch_[i] = sb.epoch;
}

std::shared_ptr<io::file> segment_set::get(std::uint64_t index) const {
  std::shared_lock lk(mu_);
  return files_[index];
}

std::vector<bool> segment_set::present() const {
  std::shared_lock lk(mu_);
  std::vector<bool> v(files_.size());
  for (std::size_t i = 0; i < files_.size(); ++i) v[i] = files_[i] != nullptr;
  return v;
}

std::vector<std::shared_ptr<io::file>> segment_set::files() const {
  std::shared_lock lk(mu_);
  return files_;
}

void segment_set::mark_data(page_bitmap& bits) const {
  const auto all = files();
  for (std::uint64_t i = 0; i < all.size(); ++i) {
    if (!all[i]) continue;
    const std::uint64_t base = i * pages_per_segment_;
    for_each_data_run(*all[i], segment_size_, page_size_, "open",
                      [&](std::uint64_t first, std::uint64_t end) {
                        bits.set_range(base + first, std::min(base + end, bits.size()));
                      });
  }
}

segment_set::crc_table& segment_set::table(std::uint64_t index) {
  // Hot path (every page read from a segment): one acquire load, no lock.
  if (crc_table* t = table_ptrs_[index].load(std::memory_order_acquire)) return *t;
  std::lock_guard load(load_mu_);
  if (crc_table* t = table_ptrs_[index].load(std::memory_order_acquire)) return *t;
  std::shared_ptr<io::file> f = get(index);
  auto t = std::make_unique<crc_table>(pages_per_segment_);
  if (f) {
    std::vector<std::uint32_t> raw(segment_table_bytes(pages_per_segment_) / 4);
    eng_.read_at(*f, segment_size_ + segment_header_slots * segment_header_size, raw.data(),
                 raw.size() * 4);
    for (std::uint64_t p = 0; p < pages_per_segment_; ++p) {
      (*t)[p].store(raw[p], std::memory_order_relaxed);
    }
  }
  crc_table& ref = *t;
  tables_[index] = std::move(t);  // owned under load_mu_, published below
  table_ptrs_[index].store(&ref, std::memory_order_release);
  return ref;
}

bool segment_set::verify(std::uint64_t page, const void* image) {
  const std::uint32_t want =
      table(page / pages_per_segment_)[page % pages_per_segment_].load(std::memory_order_relaxed);
  if (want == 0) return all_zero(image, page_size_);
  return crc32c(image, page_size_) == want;
}

std::optional<std::uint32_t> segment_set::loaded_crc(std::uint64_t page) const {
  const crc_table* t = table_ptrs_[page / pages_per_segment_].load(std::memory_order_acquire);
  if (t == nullptr) return std::nullopt;
  return (*t)[page % pages_per_segment_].load(std::memory_order_relaxed);
}

error segment_set::verify_error(std::uint64_t page, const void* image, const char* op) {
  const std::uint64_t seg = page / pages_per_segment_;
  const std::uint32_t want = table(seg)[page % pages_per_segment_].load(std::memory_order_relaxed);
  char msg[200];
  if (want == 0) {
    std::snprintf(msg, sizeof msg,
                  "page %llu (offset %llu) should be a hole but holds data: the segment was "
                  "damaged after its checkpoint",
                  static_cast<unsigned long long>(page),
                  static_cast<unsigned long long>((page % pages_per_segment_) * page_size_));
  } else {
    std::snprintf(msg, sizeof msg,
                  "page %llu (offset %llu) fails its checksum (stored %08x, computed %08x): the "
                  "segment was damaged after its checkpoint",
                  static_cast<unsigned long long>(page),
                  static_cast<unsigned long long>((page % pages_per_segment_) * page_size_), want,
                  crc32c(image, page_size_));
  }
  return error(errc::corrupt, path_of(seg), op, msg);
}

std::shared_ptr<io::file> segment_set::create_segment(std::uint64_t index, std::uint64_t epoch) {
  std::shared_ptr<io::file> f = eng_.open(path_of(index), io::open_mode::create);
  slot_epochs_[index] = {-1, -1};
  write_touch(*f, index, epoch);
  if (eng_.size(*f) != file_size_) eng_.truncate(*f, file_size_);
  std::unique_lock lk(mu_);
  files_[index] = f;
  return f;
}

std::uint64_t segment_set::checkpoint(
    io::file& journal, const std::vector<std::pair<std::uint64_t, std::uint64_t>>& entries,
    std::uint64_t epoch) {
  std::map<std::uint64_t, std::set<std::uint64_t>> touched;  // segment → dirty table blocks
  bool created = false;
  auto segment_for_write = [&](std::uint64_t seg) -> io::file* {
    std::shared_ptr<io::file> f = get(seg);
    if (!f) {
      f = create_segment(seg, epoch);
      created = true;
    }
    table(seg);  // loaded before any entry of it changes
    touched[seg];
    return f.get();
  };

  const std::size_t per_chunk = std::max<std::size_t>(1, checkpoint_chunk / page_size_);
  std::vector<std::byte> buf;
  std::vector<io::read_request> reads;
  std::vector<io::write_request> writes;
  std::vector<std::uint64_t> chunk_pages;
  auto flush_data = [&] {
    if (reads.empty()) return;
    eng_.read(reads);
    for (std::size_t k = 0; k < chunk_pages.size(); ++k) {
      const std::uint64_t page = chunk_pages[k];
      const std::uint64_t seg = page / pages_per_segment_;
      const std::uint64_t in_seg = page % pages_per_segment_;
      table(seg)[in_seg].store(crc32c(reads[k].buf, page_size_),
                                    std::memory_order_relaxed);
      touched[seg].insert(in_seg / entries_per_block);
    }
    eng_.write(writes);
    reads.clear();
    writes.clear();
    chunk_pages.clear();
  };

  std::uint64_t applied = 0;
  std::size_t i = 0;
  while (i < entries.size()) {
    const auto [page, entry] = entries[i];
    const std::uint64_t seg = page / pages_per_segment_;
    if (!journal_index::is_zero(entry)) {
      if (reads.empty()) buf.resize(per_chunk * page_size_);
      std::byte* slot = buf.data() + reads.size() * page_size_;
      io::file* f = segment_for_write(seg);
      reads.push_back({&journal, journal_index::offset(entry), slot, page_size_});
      writes.push_back({f, (page % pages_per_segment_) * page_size_, slot, page_size_});
      chunk_pages.push_back(page);
      if (reads.size() == per_chunk) flush_data();
      ++applied;
      ++i;
      continue;
    }
    // A run of consecutive discarded pages within one segment → one punched hole.
    std::size_t j = i + 1;
    while (j < entries.size() && journal_index::is_zero(entries[j].second) &&
           entries[j].first == entries[j - 1].first + 1 &&
           entries[j].first / pages_per_segment_ == seg) {
      ++j;
    }
    if (std::shared_ptr<io::file> f = get(seg)) {  // a missing segment is all holes already
      crc_table& t = table(seg);
      auto& dirty = touched[seg];
      for (std::size_t k = i; k < j; ++k) {
        const std::uint64_t in_seg = entries[k].first % pages_per_segment_;
        t[in_seg].store(0, std::memory_order_relaxed);
        dirty.insert(in_seg / entries_per_block);
      }
      eng_.punch_hole(*f, (page % pages_per_segment_) * page_size_, (j - i) * page_size_);
    }
    applied += j - i;
    i = j;
  }
  flush_data();

  // The changed table blocks, then one fdatasync per touched segment.
  std::vector<std::uint32_t> blocks;
  for (const auto& [seg, dirty] : touched) {
    if (dirty.empty()) continue;
    const crc_table& t = table(seg);
    std::shared_ptr<io::file> f = get(seg);
    blocks.assign(dirty.size() * entries_per_block, 0);
    std::vector<io::write_request> tw;
    std::size_t n = 0;
    for (std::uint64_t b : dirty) {
      std::uint32_t* out = blocks.data() + n * entries_per_block;
      const std::uint64_t first = b * entries_per_block;
      const std::uint64_t last = std::min<std::uint64_t>(first + entries_per_block, pages_per_segment_);
      for (std::uint64_t p = first; p < last; ++p) out[p - first] = t[p].load(std::memory_order_relaxed);
      tw.push_back({f.get(), segment_size_ + segment_header_slots * segment_header_size + b * table_block, out,
                    table_block});
      ++n;
    }
    eng_.write(tw);
    if (slot_epochs_[seg][0] != static_cast<std::int64_t>(epoch) &&
        slot_epochs_[seg][1] != static_cast<std::int64_t>(epoch)) {
      write_touch(*f, seg, epoch);
    } else {
      touch_[seg] = epoch;
    }
  }
  for (const auto& [seg, dirty] : touched) eng_.sync(*get(seg));
  if (created) eng_.sync_dir(dir_);
  return applied;
}

void segment_set::rebuild_tables() {
  const std::size_t per_chunk = std::max<std::size_t>(1, checkpoint_chunk / page_size_);
  std::vector<std::byte> buf;
  for (std::uint64_t seg = 0; seg < files_.size(); ++seg) {
    std::shared_ptr<io::file> f = get(seg);
    if (!f) continue;
    crc_table& t = table(seg);
    for (std::uint64_t p = 0; p < pages_per_segment_; ++p) t[p].store(0, std::memory_order_relaxed);
    // Pages in data extents, read per chunk; holes keep entry 0.
    std::vector<std::uint64_t> pages;
    for_each_data_run(*f, segment_size_, page_size_, "rebuild checksums",
                      [&](std::uint64_t first, std::uint64_t end) {
                        for (std::uint64_t p = first; p < std::min(end, pages_per_segment_); ++p) {
                          pages.push_back(p);
                        }
                      });
    for (std::size_t i = 0; i < pages.size(); i += per_chunk) {
      const std::size_t n = std::min(per_chunk, pages.size() - i);
      buf.resize(n * page_size_);
      std::vector<io::read_request> reads;
      for (std::size_t k = 0; k < n; ++k) {
        reads.push_back({f.get(), pages[i + k] * page_size_, buf.data() + k * page_size_, page_size_});
      }
      eng_.read(reads);
      for (std::size_t k = 0; k < n; ++k) {
        const std::byte* img = buf.data() + k * page_size_;
        // An all-zero page (a block the writer zeroed) keeps entry 0: it reads as zeros.
        t[pages[i + k]].store(all_zero(img, page_size_) ? 0 : crc32c(img, page_size_),
                              std::memory_order_relaxed);
      }
    }
    std::vector<std::uint32_t> raw(segment_table_bytes(pages_per_segment_) / 4, 0);
    for (std::uint64_t p = 0; p < pages_per_segment_; ++p) raw[p] = t[p].load(std::memory_order_relaxed);
    eng_.write_at(*f, segment_size_ + segment_header_slots * segment_header_size, raw.data(),
                  raw.size() * 4);
    eng_.sync(*f);
  }
}

void segment_set::rewrite_identity(const std::string& path, std::uint64_t index, const uuid& id) {
  std::shared_ptr<io::file> f = eng_.open(path, io::open_mode::read_write);
  segment_header h = header_for(index, touch_[index]);
  h.id = id;
  std::vector<std::byte> buf(segment_header_slots * segment_header_size);  // slot 1: zeros
  encode_segment_header(buf.data(), h);
  eng_.write_at(*f, segment_size_, buf.data(), buf.size());
  eng_.sync(*f);
}

}  // namespace pheap::store
