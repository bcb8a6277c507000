// pheap/graph/edge_io.hpp — edge-list readers and writers.
//
// TEXT format (SNAP / Matrix Market conventions), one edge per line:
//   u v        unweighted edge u -> v (ids: decimal, 0 .. 2^64-1)
//   u v w      weighted edge; w is a decimal uint64 (u64 graphs) or a floating-point number
//              (f32 graphs, anything std::from_chars accepts, must be finite). When the graph
//              is unweighted a third token is accepted and ignored, but must still be a number.
//   Tokens are separated by spaces or tabs; CR before LF is ignored; the last line may lack a
//   newline. Lines that are empty (only whitespace) or whose first non-blank character is '#'
//   or '%' are comments (this includes Matrix Market "%%MatrixMarket" headers). When a file
//   starts with "%%MatrixMarket", its first non-comment line is the "rows cols nnz" size line
//   and is skipped. Ids are taken as written (Matrix Market's 1-based ids are not shifted).
// BINARY format: consecutive little-endian records of uint64 src, uint64 dst, and — when the
//   graph is weighted — an 8-byte weight: uint64 for u64 graphs, IEEE binary64 for f32 graphs
//   (converted to float). No header.
//
// COMPRESSION: an input that starts with the gzip (1f 8b) or zstd (28 b5 2f fd) magic bytes is
//   decompressed while it is read (zlib, libzstd; concatenated members/frames too), whatever
//   its name; the formats above apply to the decompressed bytes, and every offset (offset(),
//   resume positions, error messages) counts decompressed bytes. Resuming a compressed input
//   decompresses it again from its start up to the offset. Corrupt or truncated compressed
//   data stops the reader like a malformed line (failed(), error() names the file, the
//   decompressed offset and the compressed byte), also with skip_bad_lines. Caveat: gzip and
//   zstd verify a member's or frame's checksum at its end, so damage inside one may first
//   decode to wrong bytes, which parse as a malformed line or, rarely, as edges.
//
// Outcomes (each one tested):
//   * malformed line (bad token, wrong token count, id > 2^64-1, non-finite weight):
//     strict mode -> reading stops *before* that line; failed() is true and error() names the
//     file, 1-based line number, byte offset and text. With skip_bad_lines the line is skipped
//     and counted in bad_lines().
//   * truncated binary record at end of input -> failed(), error() gives the byte offset of the
//     record; always an error, also with skip_bad_lines (lost bytes are not a "line").
//   * empty input (or only comments) -> 0 edges, eof(), not an error.
//   * unreadable file -> input_error thrown from the constructor.
//   * corrupt or truncated gzip/zstd data -> failed(), error() says which and where.
//   * a text line longer than reader_options::max_line_bytes (1 MiB: no newline in that many
//     bytes, e.g. /dev/zero or a binary file read as text) -> failed(), error() names the
//     line and its offset; always an error, also with skip_bad_lines (error().skippable() is
//     false: skipping to the next newline could read for ever). The buffer never grows past it.
//   * the text of a bad line in error() (and the tokens quoted in its reason) shows bytes that
//     are not printable ASCII as \xNN: a binary or NUL byte never reaches a terminal raw.
// Positions: offset() is the byte offset of the first unconsumed byte, always at a line
// (text) or record (binary) boundary, so a reader constructed with (offset(), line()) of an
// earlier reader continues exactly where it stopped (a binary offset inside a record is
// rejected with pheap::error(invalid_argument)). Input "-" is stdin.
//
// STREAMS: "-", a named FIFO, a pipe such as bash's <(zcat x.gz) (/dev/fd/N), a character
// device — any input that is not a regular file — is opened exactly once and never seeked; a
// start offset N > 0 reads and skips its first N bytes (so the same stream, fed again from its
// start, continues where an earlier reader stopped).
//
// CONSUMED CHECKSUM: consumed_checksum() is the CRC32C (pheap/crc32c.hpp) of the decompressed
// bytes [base, offset()) — what the reader has consumed, from the input's start (base 0) or from
// the start of its part (input_prefix::base) — whenever it is known: always when the reader
// started at 0, and with input_prefix::checksum or ::verify (which read the bytes between base
// and the start instead of seeking past them). With ::verify a prefix that differs from the
// expected checksum (another file, or the file changed) or ends early makes the constructor
// throw input_changed. graph::ingest records the checksum with each watermark and verifies it
// at resume (pheap/graph/ingest.hpp, "Changed inputs"); the distributed ingestion does the same
// per rank over the rank's part of each input (graph/mpi/FORMAT.md).
#pragma once

#include <pheap/graph/types.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pheap::graph {

namespace detail {
class input_source;  // graph/src/input_source.hpp
}

// The size of `path` in decompressed bytes when it is known without reading the data (a plain
// file's size; a zstd file whose frames declare their sizes); nullopt otherwise (gzip, stdin).
std::optional<std::uint64_t> decoded_size(const std::string& path);

// Thrown by edge_reader's constructor (input_prefix::verify): the bytes before the start are
// not those read before. what(): "<file>: <why>".
class input_changed : public std::runtime_error {
 public:
  input_changed(std::string file, std::uint64_t offset, const std::string& why);
  const std::string& file() const noexcept { return file_; }
  std::uint64_t offset() const noexcept { return offset_; }  // the start that was verified

 private:
  std::string file_;
  std::uint64_t offset_;
};

// What a reader that starts past byte 0 does with the bytes before its start.
//   seek      a plain regular file is seeked (the bytes before are not read); a compressed
//             input or a stream is read from its start and the bytes skipped.
//             consumed_checksum() is then unknown.
//   checksum  the bytes [base, start) are read (never seeked past) and checksummed, so
//             consumed_checksum() is known. The input is positioned at `base` as a seek
//             would position it (a regular file is seeked there).
//   verify    as checksum, and the checksum must equal `crc`, else input_changed.
// base is 0 for a whole input; a part of one (reader_options::end_offset) starts at its own
// base, which must be a line (text) or record (binary) boundary <= the start.
struct input_prefix {
  enum class mode { seek, checksum, verify };
  mode how = mode::seek;
  std::uint32_t crc = 0;
  std::uint64_t base = 0;
};

struct reader_options {
  input_format format = input_format::text;
  weight_kind weights = weight_kind::none;  // what the target graph stores
  bool skip_bad_lines = false;
  std::size_t buffer_bytes = std::size_t{1} << 20;
  std::size_t max_line_bytes = std::size_t{1} << 20;  // text: longer lines are an error
  // The reader ends (eof()) at the first line or record that starts at or after this offset:
  // a part of an input (pheap/graph/mpi: each rank reads a range cut at line boundaries).
  std::uint64_t end_offset = UINT64_MAX;
};

class edge_reader {
 public:
  edge_reader(std::string path, const reader_options& opts, std::uint64_t start_offset = 0,
              std::uint64_t start_line = 0, input_prefix prefix = {});
  ~edge_reader();
  edge_reader(const edge_reader&) = delete;
  edge_reader& operator=(const edge_reader&) = delete;

  // Appends up to `max` edges to `out` and returns how many. Returns fewer than `max` only at
  // end of input or when a malformed line/record stops a strict reader.
  std::size_t read(std::vector<edge>& out, std::size_t max);

  bool eof() const noexcept { return eof_; }
  bool failed() const noexcept { return error_.has_value(); }
  const input_error& error() const { return *error_; }
  std::uint64_t offset() const noexcept { return offset_; }
  std::uint64_t line() const noexcept { return line_; }
  std::uint64_t bad_lines() const noexcept { return bad_lines_; }
  const std::string& path() const noexcept { return path_; }
  bool is_stdin() const noexcept { return path_ == "-"; }
  // CRC32C of the decompressed bytes [base, offset()); nullopt when the reader seeked past
  // bytes it did not read (see CONSUMED CHECKSUM above).
  std::optional<std::uint32_t> consumed_checksum();

 private:
  bool fill();  // reads more bytes into the buffer; false at end of file
  std::size_t read_text(std::vector<edge>& out, std::size_t max);
  std::size_t read_binary(std::vector<edge>& out, std::size_t max);
  // Parses one line; returns true and sets e for an edge, false for a comment; throws a
  // reason string (std::string) for malformed lines.
  bool parse_line(const char* b, const char* e, edge& out);
  void scan_matrix_market_header();
  void read_prefix(std::uint64_t base, std::uint64_t n, const input_prefix& p);
  void fold_checksum() noexcept;  // crc_ += the consumed bytes of buf_ not yet in it
  bool take_damage();  // the damage fill() met, once what precedes it is consumed: error_

  std::string path_;
  reader_options opts_;
  std::unique_ptr<detail::input_source> src_;
  std::vector<char> buf_;
  std::size_t pos_ = 0, end_ = 0;  // unconsumed bytes are buf_[pos_, end_)
  bool file_eof_ = false;
  bool eof_ = false;
  std::uint64_t offset_ = 0;  // file offset of buf_[pos_]
  std::uint64_t line_ = 0;
  std::uint64_t bad_lines_ = 0;
  bool mm_size_line_pending_ = false;
  std::optional<input_error> error_;
  std::string damage_;          // corrupt compressed data met after the bytes in buf_
  std::uint32_t crc_ = 0;       // CRC32C of the input's bytes from base to buf_[crc_pos_]
  std::size_t crc_pos_ = 0;     // <= pos_
  bool crc_known_ = true;
};

// Writes edges in either format, to a file (created/truncated) or "-" for stdout. Text weights
// round-trip exactly (shortest representation for f32).
class edge_writer {
 public:
  edge_writer(std::string path, input_format format, weight_kind weights);
  ~edge_writer();  // closes; errors at this point are lost, call close() to see them
  edge_writer(const edge_writer&) = delete;
  edge_writer& operator=(const edge_writer&) = delete;
  void write(const edge* edges, std::size_t n);
  void write(const edge& e) { write(&e, 1); }
  // Flushes buffered output and closes; throws pheap::error (io, no_space) naming the path on
  // failure, as do the constructor and write().
  void close();
  std::uint64_t bytes_written() const noexcept { return bytes_; }

 private:
  void drain();
  std::string path_;
  input_format format_;
  weight_kind weights_;
  int fd_ = -1;
  std::vector<char> buf_;
  std::uint64_t bytes_ = 0;
};

}  // namespace pheap::graph
