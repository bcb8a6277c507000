// gzip and zstd encodings of test data, made with zlib and libzstd in memory: `parts` members
// (gzip) or frames (zstd) back to back, as `cat a.gz b.gz` makes them.
#pragma once

#include <zlib.h>
#include <zstd.h>

#include <stdexcept>
#include <string>

namespace pheap::graph::test {

// `data` cut into `parts` pieces, each compressed on its own and concatenated.
template <class F>
std::string in_parts(const std::string& data, int parts, F&& one) {
  std::string out;
  const std::size_t step = data.size() / static_cast<std::size_t>(parts) + 1;
  for (std::size_t off = 0; off < data.size() || (off == 0 && data.empty()); off += step) {
    out += one(data.substr(off, step));
    if (data.empty()) break;
  }
  return out;
}

inline std::string gzip(const std::string& data, int members = 1) {
  return in_parts(data, members, [](const std::string& d) {
    z_stream z{};
    if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      throw std::runtime_error("deflateInit2");
    }
    std::string out(deflateBound(&z, d.size()) + 32, '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(d.data()));
    z.avail_in = static_cast<uInt>(d.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    if (deflate(&z, Z_FINISH) != Z_STREAM_END) throw std::runtime_error("deflate");
    out.resize(z.total_out);
    deflateEnd(&z);
    return out;
  });
}

// declare_size=false: frames written by the streaming API without a pledged size.
inline std::string zstd(const std::string& data, int frames = 1, bool declare_size = true) {
  return in_parts(data, frames, [declare_size](const std::string& d) {
    std::string out(ZSTD_compressBound(d.size()) + 32, '\0');
    if (declare_size) {
      const std::size_t n = ZSTD_compress(out.data(), out.size(), d.data(), d.size(), 3);
      if (ZSTD_isError(n)) throw std::runtime_error("ZSTD_compress");
      out.resize(n);
      return out;
    }
    ZSTD_CStream* cs = ZSTD_createCStream();
    ZSTD_initCStream(cs, 3);
    ZSTD_inBuffer in{d.data(), d.size(), 0};
    ZSTD_outBuffer o{out.data(), out.size(), 0};
    while (in.pos < in.size) ZSTD_compressStream(cs, &o, &in);
    while (ZSTD_endStream(cs, &o) != 0) {
    }
    ZSTD_freeCStream(cs);
    out.resize(o.pos);
    return out;
  });
}

}  // namespace pheap::graph::test
