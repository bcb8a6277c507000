// graph/src/input_source.hpp — the bytes of an edge-list input: a file or stdin, read as is or
// decompressed when it starts with the gzip (1f 8b) or zstd (28 b5 2f fd) magic bytes.
//
// Detection looks at the input's first bytes only, never at its name: a ".txt" that holds gzip
// data is decompressed, a ".gz" that holds text is read as text. Decompression:
//   gzip  zlib's inflate with gzip/zlib header detection; concatenated members (cat a.gz b.gz)
//         are read one after the other, as gzip(1) does;
//   zstd  libzstd's streaming decoder; concatenated frames likewise.
// Positions (edge_reader's offsets) are always in DECOMPRESSED bytes. Starting at offset N
// seeks in a plain regular file; a compressed one, and a STREAM (stdin, a named FIFO, a pipe
// such as bash's <(zcat x.gz), a character device: anything that is not a regular file), is
// read from its start and N bytes are skipped. A stream is opened exactly once and never
// seeked: its first bytes, read for detection, are kept and handed out first.
//
// Failure modes (edge_reader adds the file and offset): an unreadable file or a read error is
// std::runtime_error; corrupt compressed data ("corrupt gzip data near compressed byte N:
// ..."), a stream that ends inside a member or frame ("truncated gzip input") and trailing
// bytes after a frame that are not another frame are corrupt_input, which stops the reader
// like a malformed line; every byte decoded before the damage is returned first (read() throws
// on the call after), so the reader keeps every complete line before it and names the
// decompressed offset where the data stops.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

namespace pheap::graph::detail {

enum class compression { none, gzip, zstd };

class corrupt_input : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class input_source {
 public:
  virtual ~input_source() = default;
  // Up to n bytes into dst; 0 only at the end of the input.
  virtual std::size_t read(char* dst, std::size_t n) = 0;
  virtual compression kind() const noexcept = 0;
  virtual bool stream() const noexcept = 0;  // not a regular file: read once, never seeked
};

// True for "-" and for a path that is not a regular file (stat, never open: opening a FIFO to
// look at it would take data meant for the reader).
bool is_stream(const std::string& path);

// Opens `path` ("-" for stdin) positioned at decompressed byte `offset`. Throws
// std::runtime_error (cannot open, cannot seek, or one of the failure modes above).
std::unique_ptr<input_source> open_input(const std::string& path, std::uint64_t offset);

// The decompressed size of `path` when it is known without reading the data: a plain file's
// size, or the sum of the content sizes a zstd file's frame headers declare; nullopt for gzip
// (its trailer keeps the size modulo 2^32 only), for zstd frames without a declared size, and
// for stdin.
std::optional<std::uint64_t> decoded_size(const std::string& path);

}  // namespace pheap::graph::detail
