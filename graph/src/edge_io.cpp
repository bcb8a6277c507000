#include <pheap/graph/edge_io.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <pheap/crc32c.hpp>
#include <pheap/error.hpp>

#include "input_source.hpp"

namespace pheap::graph {

std::optional<std::uint64_t> decoded_size(const std::string& path) { return detail::decoded_size(path); }

// ---- types.hpp out-of-line parts ----------------------------------------------------------

const char* to_string(weight_kind k) noexcept {
  switch (k) {
    case weight_kind::none: return "none";
    case weight_kind::u64: return "u64";
    case weight_kind::f32: return "f32";
  }
  return "?";
}

weight_kind parse_weight_kind(std::string_view s) {
  if (s == "none") return weight_kind::none;
  if (s == "u64") return weight_kind::u64;
  if (s == "f32") return weight_kind::f32;
  throw error(errc::invalid_argument, "", "parse weight kind",
              "unknown weight type '" + std::string(s) + "' (none|u64|f32)");
}

const char* to_string(input_format f) noexcept {
  return f == input_format::text ? "text" : "binary";
}

input_format parse_input_format(std::string_view s) {
  if (s == "text") return input_format::text;
  if (s == "binary") return input_format::binary;
  throw error(errc::invalid_argument, "", "parse input format",
              "unknown format '" + std::string(s) + "' (text|binary)");
}

namespace {
std::string describe(const std::string& file, std::uint64_t line, std::uint64_t offset,
                     const std::string& text, const std::string& reason) {
  std::string m = file;
  if (line != 0) m += ":" + std::to_string(line);
  m += ": " + reason + " (byte offset " + std::to_string(offset) + ")";
  if (!text.empty()) m += ": '" + text + "'";
  return m;
}

// Bytes as they may reach a terminal: printable ASCII and tabs as they are, others as \xNN.
std::string printable(std::string_view t) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(t.size());
  for (const char ch : t) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c >= 0x20 && c < 0x7f) || c == '\t') {
      s += ch;
    } else {
      s += "\\x";
      s += kHex[c >> 4];
      s += kHex[c & 15];
    }
  }
  return s;
}

std::string clip(const char* b, const char* e) {
  std::size_t n = static_cast<std::size_t>(e - b);
  if (n > 0 && b[n - 1] == '\r') --n;
  std::string s = printable(std::string_view(b, std::min<std::size_t>(n, 200)));
  if (n > 200) s += "...";
  return s;
}

std::string hex32(std::uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "%08x", v);
  return b;
}

constexpr bool is_blank(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

std::uint64_t load_le64(const char* p) noexcept {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}
void store_le64(char* p, std::uint64_t v) noexcept {
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  std::memcpy(p, &v, 8);
}
}  // namespace

input_error::input_error(std::string file, std::uint64_t line, std::uint64_t offset,
                         std::string text, const std::string& reason, bool skippable)
    : std::runtime_error(describe(file, line, offset, text, reason)),
      file_(std::move(file)),
      line_(line),
      offset_(offset),
      text_(std::move(text)),
      skippable_(skippable) {}

input_changed::input_changed(std::string file, std::uint64_t offset, const std::string& why)
    : std::runtime_error(file + ": " + why), file_(std::move(file)), offset_(offset) {}

// ---- edge_reader --------------------------------------------------------------------------

edge_reader::edge_reader(std::string path, const reader_options& opts, std::uint64_t start_offset,
                         std::uint64_t start_line, input_prefix prefix)
    : path_(std::move(path)), opts_(opts), offset_(start_offset), line_(start_line) {
  if (opts_.buffer_bytes < 4096) opts_.buffer_bytes = 4096;
  if (opts_.max_line_bytes < 64) opts_.max_line_bytes = 64;
  const std::size_t rec = opts_.weights == weight_kind::none ? 16 : 24;
  if (opts_.format == input_format::binary && start_offset % rec != 0) {
    throw pheap::error(errc::invalid_argument, path_, "open edge list",
                       "resume offset " + std::to_string(start_offset) +
                           " is not a multiple of the " + std::to_string(rec) + "-byte record size");
  }
  const bool checksummed = prefix.how != input_prefix::mode::seek;
  if (checksummed && (prefix.base > start_offset ||
                      (opts_.format == input_format::binary && prefix.base % rec != 0))) {
    throw pheap::error(errc::invalid_argument, path_, "open edge list",
                       "checksum base " + std::to_string(prefix.base) + " is not a record boundary at or before " +
                           "the resume offset " + std::to_string(start_offset));
  }
  const std::uint64_t open_at = checksummed ? prefix.base : start_offset;
  try {
    src_ = detail::open_input(path_, open_at);
  } catch (const std::runtime_error& e) {
    throw input_error(path_, 0, open_at, "", e.what());
  }
  buf_.resize(opts_.buffer_bytes);
  if (checksummed && start_offset > prefix.base) {
    read_prefix(prefix.base, start_offset - prefix.base, prefix);
    // From the input's start read_prefix also found the Matrix Market size line; from a
    // part's base the header lies before it.
    if (prefix.base != 0 && opts_.format == input_format::text) scan_matrix_market_header();
  } else {
    crc_known_ = checksummed || start_offset == 0;  // nothing consumed from the base yet
    if (opts_.format == input_format::text) scan_matrix_market_header();
  }
}

// Reads the input's n bytes from `base` (where src_ stands), checksumming them and, from the
// input's start, finding whether a Matrix Market size line lies beyond them; the bytes read
// past n stay in the buffer, unconsumed.
void edge_reader::read_prefix(std::uint64_t base, std::uint64_t n, const input_prefix& p) {
  static constexpr std::string_view kMM = "%%MatrixMarket";
  std::string head;          // the first bytes, up to kMM's length
  bool decided = opts_.format != input_format::text || base != 0;
  bool in_comment = false, data_line = false;
  std::uint64_t left = n;
  std::uint32_t crc = 0;
  for (;;) {
    std::size_t got = 0;
    try {
      got = src_->read(buf_.data(), buf_.size());
    } catch (const std::runtime_error& e) {
      throw input_error(path_, 0, base + n - left, "", e.what(), false);
    }
    if (got == 0) {
      throw input_changed(path_, base + n,
                          "it ends at byte " + std::to_string(base + n - left) + ", before byte " +
                              std::to_string(base + n) + " where the reading stopped: it is not the input "
                              "that was read then");
    }
    const auto take = static_cast<std::size_t>(std::min<std::uint64_t>(got, left));
    crc = pheap::crc32c(buf_.data(), take, crc);
    for (std::size_t i = 0; i < take && !decided; ++i) {
      const char c = buf_[i];
      if (head.size() < kMM.size()) {
        head += c;
        if (kMM.substr(0, head.size()) != head) decided = true;  // not Matrix Market
      }
      if (in_comment) {
        in_comment = c != '\n';
      } else if (c == '#' || c == '%') {
        in_comment = true;
      } else if (c != '\n' && !is_blank(c)) {
        data_line = true;  // the size line (or an edge) starts before the resume point
        decided = true;
      }
    }
    left -= take;
    if (left == 0) {
      pos_ = crc_pos_ = take;
      end_ = got;
      break;
    }
  }
  mm_size_line_pending_ = head == kMM && !data_line;
  crc_ = crc;
  if (p.how == input_prefix::mode::verify && crc != p.crc) {
    const std::string which = base == 0 ? "its first " + std::to_string(n) + " bytes are"
                                        : "its bytes " + std::to_string(base) + "-" + std::to_string(base + n - 1) + " are";
    throw input_changed(path_, base + n,
                        which + " not those read before (CRC32C " + hex32(crc) + ", recorded " + hex32(p.crc) +
                            "): the input was changed or replaced");
  }
}

void edge_reader::fold_checksum() noexcept {
  if (crc_pos_ < pos_) crc_ = pheap::crc32c(buf_.data() + crc_pos_, pos_ - crc_pos_, crc_);
  crc_pos_ = pos_;
}

std::optional<std::uint32_t> edge_reader::consumed_checksum() {
  if (!crc_known_) return std::nullopt;
  fold_checksum();
  return crc_;
}

edge_reader::~edge_reader() = default;

// Decides whether the Matrix Market size line still lies ahead. At offset 0 we just look at
// the first bytes; when resuming inside a regular file we re-read the header from the start.
void edge_reader::scan_matrix_market_header() {
  static constexpr char kMM[] = "%%MatrixMarket";
  constexpr std::size_t kLen = sizeof(kMM) - 1;
  if (offset_ == 0) {
    while (end_ - pos_ < kLen && fill()) {
    }
    mm_size_line_pending_ = end_ - pos_ >= kLen && std::memcmp(buf_.data() + pos_, kMM, kLen) == 0;
    return;
  }
  // Resuming a regular file: find the end of the size line by reading the header from the
  // input's start, through a second source (a stream cannot be opened twice: nothing pending).
  if (src_->stream()) return;
  std::unique_ptr<detail::input_source> from_start;
  try {
    from_start = detail::open_input(path_, 0);
  } catch (const std::runtime_error&) {
    return;  // cannot read it again: nothing pending
  }
  std::string head;
  char tmp[65536];
  bool is_mm = false;
  for (;;) {
    std::size_t n = 0;
    try {
      n = from_start->read(tmp, sizeof tmp);
    } catch (const std::runtime_error&) {
    }
    if (n == 0) return;  // header shorter than expected: nothing pending
    head.append(tmp, n);
    if (!is_mm) {
      if (head.size() < kLen) continue;
      if (head.compare(0, kLen, kMM) != 0) return;
      is_mm = true;
    }
    // Walk complete lines: comments, then the size line.
    std::size_t p = 0;
    while (true) {
      const std::size_t nl = head.find('\n', p);
      if (nl == std::string::npos) break;
      std::size_t q = p;
      while (q < nl && is_blank(head[q])) ++q;
      if (q < nl && head[q] != '#' && head[q] != '%') {
        mm_size_line_pending_ = offset_ <= p;  // the size line starts at p
        return;
      }
      p = nl + 1;
    }
    if (head.size() > (std::size_t{64} << 20)) return;  // absurd header: give up, no skip
  }
}

bool edge_reader::fill() {
  if (file_eof_) return false;
  if (pos_ > 0) {  // compact
    fold_checksum();
    std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
    end_ -= pos_;
    pos_ = crc_pos_ = 0;
  }
  if (end_ == buf_.size()) {  // a line longer than the buffer (read_text caps it)
    buf_.resize(std::min(buf_.size() * 2, std::max(buf_.size() + 1, opts_.max_line_bytes + 1)));
  }
  std::size_t n = 0;
  try {
    n = src_->read(buf_.data() + end_, buf_.size() - end_);
  } catch (const detail::corrupt_input& e) {
    // Like a malformed line: the reader stops at the last complete line or record before it
    // (take_damage, once everything before it is consumed); no skipping gets past it.
    damage_ = std::string(e.what()) + "; the decompressed data stops at byte " +
              std::to_string(offset_ + (end_ - pos_));
    file_eof_ = true;
    return false;
  } catch (const std::runtime_error& e) {
    throw input_error(path_, 0, offset_ + (end_ - pos_), "", e.what());
  }
  if (n == 0) {
    file_eof_ = true;
    return false;
  }
  end_ += n;
  return true;
}

bool edge_reader::take_damage() {
  if (damage_.empty()) return false;
  error_.emplace(path_, 0, offset_, "", damage_ + (end_ > pos_ ? ", inside the record or line that starts here" : ""),
                 false);
  damage_.clear();
  return true;
}

std::size_t edge_reader::read(std::vector<edge>& out, std::size_t max) {
  if (eof_ || failed() || max == 0) return 0;
  return opts_.format == input_format::text ? read_text(out, max) : read_binary(out, max);
}

namespace {
// Splits [b, e) into at most 4 whitespace-separated tokens; returns the count (4 = too many).
std::size_t tokenize(const char* b, const char* e, std::string_view tok[4]) {
  std::size_t n = 0;
  const char* p = b;
  while (p < e) {
    while (p < e && is_blank(*p)) ++p;
    if (p == e) break;
    const char* s = p;
    while (p < e && !is_blank(*p)) ++p;
    if (n == 4) return 4;
    tok[n++] = std::string_view(s, static_cast<std::size_t>(p - s));
  }
  return n;
}

std::uint64_t parse_id(std::string_view t, const char* what) {
  std::uint64_t v = 0;
  const auto r = std::from_chars(t.data(), t.data() + t.size(), v, 10);
  if (r.ec == std::errc::result_out_of_range) {
    throw std::string(what) + " '" + printable(t) + "' overflows uint64 (max 18446744073709551615)";
  }
  if (r.ec != std::errc() || r.ptr != t.data() + t.size()) {
    throw std::string("bad ") + what + " '" + printable(t) + "' (expected a decimal unsigned integer)";
  }
  return v;
}

double parse_number(std::string_view t) {
  double v = 0;
  const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  if (r.ec != std::errc() || r.ptr != t.data() + t.size() || !std::isfinite(v)) {
    throw "bad weight '" + printable(t) + "' (expected a finite number)";
  }
  return v;
}
}  // namespace

bool edge_reader::parse_line(const char* b, const char* e, edge& out) {
  const char* p = b;
  while (p < e && is_blank(*p)) ++p;
  if (p == e || *p == '#' || *p == '%') return false;
  std::string_view tok[4];
  const std::size_t n = tokenize(p, e, tok);
  if (n == 4) throw std::string("too many fields (expected 'u v' or 'u v w')");
  if (mm_size_line_pending_) {  // "rows cols nnz": validate loosely, then skip
    mm_size_line_pending_ = false;
    return false;
  }
  if (n < 2) throw std::string("missing destination (expected 'u v' or 'u v w')");
  out.src = parse_id(tok[0], "source id");
  out.dst = parse_id(tok[1], "destination id");
  out.weight = 0;
  switch (opts_.weights) {
    case weight_kind::none:
      if (n == 3) (void)parse_number(tok[2]);
      break;
    case weight_kind::u64:
      if (n != 3) throw std::string("missing weight (expected 'u v w')");
      out.weight = parse_id(tok[2], "weight");
      break;
    case weight_kind::f32: {
      if (n != 3) throw std::string("missing weight (expected 'u v w')");
      const double w = parse_number(tok[2]);
      const float f = static_cast<float>(w);
      if (!std::isfinite(f)) throw "weight '" + printable(tok[2]) + "' overflows float";
      out.weight = f32_bits(f);
      break;
    }
  }
  return true;
}

std::size_t edge_reader::read_text(std::vector<edge>& out, std::size_t max) {
  std::size_t got = 0;
  while (got < max && !failed()) {
    if (offset_ >= opts_.end_offset) {
      eof_ = true;
      return got;
    }
    const char* base = buf_.data();
    const void* nlp = std::memchr(base + pos_, '\n', end_ - pos_);
    std::size_t line_end;  // exclusive, without the '\n'
    std::size_t consumed;
    if (nlp != nullptr) {
      line_end = static_cast<std::size_t>(static_cast<const char*>(nlp) - base);
      consumed = line_end + 1 - pos_;
    } else if (!file_eof_) {
      if (opts_.format == input_format::text && end_ - pos_ >= opts_.max_line_bytes) {
        error_.emplace(path_, line_ + 1, offset_, clip(base + pos_, base + end_),
                       "no newline within " + std::to_string(opts_.max_line_bytes) +
                           " bytes: not a text edge list (a binary one needs --format binary)",
                       false);
        return got;
      }
      fill();
      continue;
    } else if (take_damage()) {
      return got;
    } else if (pos_ == end_) {
      eof_ = true;
      return got;
    } else {  // last line without '\n'
      line_end = end_;
      consumed = end_ - pos_;
    }
    edge e;
    bool is_edge = false;
    try {
      is_edge = parse_line(base + pos_, base + line_end, e);
    } catch (const std::string& reason) {
      if (!opts_.skip_bad_lines) {
        error_.emplace(path_, line_ + 1, offset_, clip(base + pos_, base + line_end), reason);
        return got;
      }
      ++bad_lines_;
    }
    if (is_edge) {
      out.push_back(e);
      ++got;
    }
    pos_ += consumed;
    offset_ += consumed;
    ++line_;
  }
  return got;
}

std::size_t edge_reader::read_binary(std::vector<edge>& out, std::size_t max) {
  const std::size_t rec = opts_.weights == weight_kind::none ? 16 : 24;
  std::size_t got = 0;
  while (got < max) {
    if (offset_ >= opts_.end_offset) {
      eof_ = true;
      return got;
    }
    if (end_ - pos_ < rec) {
      if (fill()) continue;
      if (failed() || take_damage()) return got;
      if (pos_ == end_) {
        eof_ = true;
      } else {
        error_.emplace(path_, 0, offset_, "",
                       "truncated binary record: " + std::to_string(end_ - pos_) + " of " +
                           std::to_string(rec) + " bytes at end of input",
                       false);
      }
      return got;
    }
    const char* p = buf_.data() + pos_;
    edge e{load_le64(p), load_le64(p + 8), 0};
    if (opts_.weights == weight_kind::u64) {
      e.weight = load_le64(p + 16);
    } else if (opts_.weights == weight_kind::f32) {
      const double w = std::bit_cast<double>(load_le64(p + 16));
      const float f = static_cast<float>(w);
      if (!std::isfinite(f)) {
        if (!opts_.skip_bad_lines) {
          error_.emplace(path_, 0, offset_, "", "non-finite or out-of-range f32 weight in record");
          return got;
        }
        ++bad_lines_;
        pos_ += rec;
        offset_ += rec;
        continue;
      }
      e.weight = f32_bits(f);
    }
    out.push_back(e);
    ++got;
    pos_ += rec;
    offset_ += rec;
  }
  return got;
}

// ---- edge_writer --------------------------------------------------------------------------

edge_writer::edge_writer(std::string path, input_format format, weight_kind weights)
    : path_(std::move(path)), format_(format), weights_(weights) {
  if (path_ == "-") {
    fd_ = STDOUT_FILENO;
  } else {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) throw_errno(errno, path_, "create edge list");
  }
  buf_.reserve(std::size_t{1} << 20);
}

edge_writer::~edge_writer() {
  try {
    close();
  } catch (...) {
  }
}

void edge_writer::drain() {
  std::size_t off = 0;
  while (off < buf_.size()) {
    const ssize_t n = ::write(fd_, buf_.data() + off, buf_.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno(errno, path_, "write edge list");
    }
    off += static_cast<std::size_t>(n);
  }
  bytes_ += buf_.size();
  buf_.clear();
}

void edge_writer::write(const edge* edges, std::size_t n) {
  if (fd_ < 0) throw error(errc::invalid_argument, path_, "write edge list", "write after close");
  char tmp[96];
  for (std::size_t i = 0; i < n; ++i) {
    const edge& e = edges[i];
    if (format_ == input_format::binary) {
      store_le64(tmp, e.src);
      store_le64(tmp + 8, e.dst);
      std::size_t len = 16;
      if (weights_ == weight_kind::u64) {
        store_le64(tmp + 16, e.weight);
        len = 24;
      } else if (weights_ == weight_kind::f32) {
        store_le64(tmp + 16, std::bit_cast<std::uint64_t>(static_cast<double>(f32_from_bits(e.weight))));
        len = 24;
      }
      buf_.insert(buf_.end(), tmp, tmp + len);
    } else {
      // Field by field into a fixed buffer large enough for "u v w\n" (20+1+20+1+<=16+1).
      std::size_t len = 0;
      auto put_sep = [&](char c) { tmp[len++] = c; };
      auto put = [&](auto v) {
        const auto r = std::to_chars(tmp + len, tmp + sizeof tmp - 1, v);
        len = static_cast<std::size_t>(r.ptr - tmp);
      };
      put(e.src);
      put_sep(' ');
      put(e.dst);
      if (weights_ == weight_kind::u64) {
        put_sep(' ');
        put(e.weight);
      } else if (weights_ == weight_kind::f32) {
        put_sep(' ');
        put(f32_from_bits(e.weight));
      }
      put_sep('\n');
      char* p = tmp + len;
      buf_.insert(buf_.end(), tmp, p);
    }
    if (buf_.size() >= (std::size_t{1} << 20)) drain();
  }
}

void edge_writer::close() {
  if (fd_ < 0) return;
  drain();
  if (fd_ != STDOUT_FILENO && ::close(fd_) != 0) {
    const int err = errno;
    fd_ = -1;
    throw_errno(err, path_, "close edge list");
  }
  fd_ = -1;
}

}  // namespace pheap::graph
