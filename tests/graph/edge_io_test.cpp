// Edge-list readers and writers: the grammar of edge_io.hpp and every documented bad-input
// outcome (bad token, overflowing id, truncated binary record, empty file); gzip and zstd
// inputs detected by their magic bytes, resumed, and refused when corrupt or truncated.
#include <pheap/crc32c.hpp>
#include <pheap/graph/edge_io.hpp>
#include <pheap/graph/rmat.hpp>

#include "common/test_util.hpp"
#include "compress_util.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace pheap::graph;

namespace {

std::string write_file(const pheap::test::temp_dir& d, const std::string& name,
                       const std::string& bytes) {
  const std::string p = d / name;
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

struct read_all_result {
  std::vector<edge> edges;
  bool failed = false;
  std::string error;
  std::uint64_t error_line = 0, error_offset = 0;
  std::uint64_t bad_lines = 0;
  std::uint64_t end_offset = 0;
};

read_all_result read_all(const std::string& path, reader_options o, std::size_t batch = 3,
                         std::uint64_t off = 0, std::uint64_t line = 0) {
  o.buffer_bytes = 4096;  // small: exercises lines that straddle buffer refills
  edge_reader r(path, o, off, line);
  read_all_result res;
  while (r.read(res.edges, batch) > 0 || (!r.eof() && !r.failed())) {
  }
  res.failed = r.failed();
  if (r.failed()) {
    res.error = r.error().what();
    res.error_line = r.error().line();
    res.error_offset = r.error().offset();
  }
  res.bad_lines = r.bad_lines();
  res.end_offset = r.offset();
  return res;
}

reader_options text(weight_kind w = weight_kind::none, bool skip = false) {
  reader_options o;
  o.weights = w;
  o.skip_bad_lines = skip;
  return o;
}

}  // namespace

TEST(GraphEdgeIo, TextParsesPairsCommentsBlankLinesCrLfAndMissingFinalNewline) {
  pheap::test::temp_dir d;
  const auto p = write_file(d, "a.txt",
                            "# SNAP comment\n% another\n\n  1 2\n3\t4\r\n\t \n5 6 0.5\n"
                            "18446744073709551615 0\n7 8");
  const auto r = read_all(p, text());
  ASSERT_FALSE(r.failed) << r.error;
  const std::vector<edge> want{{1, 2, 0}, {3, 4, 0}, {5, 6, 0}, {18446744073709551615ull, 0, 0}, {7, 8, 0}};
  EXPECT_EQ(r.edges, want);
  EXPECT_EQ(r.end_offset, std::filesystem::file_size(p));
}

TEST(GraphEdgeIo, MatrixMarketHeaderAndSizeLineAreSkipped) {
  pheap::test::temp_dir d;
  const auto p = write_file(d, "m.mtx",
                            "%%MatrixMarket matrix coordinate real general\n% c\n3 3 2\n1 2 1.5\n2 3 2.5\n");
  const auto r = read_all(p, text(weight_kind::f32));
  ASSERT_FALSE(r.failed) << r.error;
  ASSERT_EQ(r.edges.size(), 2u);
  EXPECT_EQ(r.edges[0], (edge{1, 2, f32_bits(1.5f)}));
  EXPECT_EQ(r.edges[1], (edge{2, 3, f32_bits(2.5f)}));
  // Resuming after the size line must not skip a real edge line.
  const auto r2 = read_all(p, text(weight_kind::f32), 3, /*off=*/std::string("%%MatrixMarket matrix coordinate real general\n% c\n3 3 2\n").size(), 3);
  ASSERT_EQ(r2.edges.size(), 2u);
  EXPECT_EQ(r2.edges[0].src, 1u);
}

TEST(GraphEdgeIo, WeightedTextParsesU64AndF32) {
  pheap::test::temp_dir d;
  const auto p = write_file(d, "w.txt", "1 2 7\n2 3 18446744073709551615\n");
  auto r = read_all(p, text(weight_kind::u64));
  ASSERT_FALSE(r.failed) << r.error;
  EXPECT_EQ(r.edges, (std::vector<edge>{{1, 2, 7}, {2, 3, 18446744073709551615ull}}));
  const auto q = write_file(d, "f.txt", "1 2 0.25\n2 3 -1e3\n");
  r = read_all(q, text(weight_kind::f32));
  ASSERT_FALSE(r.failed) << r.error;
  EXPECT_EQ(r.edges, (std::vector<edge>{{1, 2, f32_bits(0.25f)}, {2, 3, f32_bits(-1000.0f)}}));
}

TEST(GraphEdgeIo, BadTokenStopsStrictReaderWithFileLineOffsetAndText) {
  pheap::test::temp_dir d;
  const auto p = write_file(d, "bad.txt", "1 2\n# c\n3 x4\n5 6\n");
  const auto r = read_all(p, text());
  ASSERT_TRUE(r.failed);
  EXPECT_EQ(r.edges, (std::vector<edge>{{1, 2, 0}}));  // edges before the bad line are delivered
  EXPECT_EQ(r.error_line, 3u);
  EXPECT_EQ(r.error_offset, 8u);
  EXPECT_EQ(r.end_offset, 8u) << "position stays at the bad line";
  EXPECT_NE(r.error.find(p + ":3"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("'3 x4'"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("bad destination id 'x4'"), std::string::npos) << r.error;
}

TEST(GraphEdgeIo, EveryMalformedLineKindIsRejectedAndSkippable) {
  pheap::test::temp_dir d;
  struct bad_case {
    const char* line;
    weight_kind w;
    const char* reason;
  };
  const bad_case cases[] = {
      {"18446744073709551616 1", weight_kind::none, "overflows uint64"},
      {"1 99999999999999999999999", weight_kind::none, "overflows uint64"},
      {"-1 2", weight_kind::none, "bad source id"},
      {"+1 2", weight_kind::none, "bad source id"},
      {"1", weight_kind::none, "missing destination"},
      {"1 2 3 4", weight_kind::none, "too many fields"},
      {"1 2 abc", weight_kind::none, "bad weight"},
      {"1 2", weight_kind::u64, "missing weight"},
      {"1 2 -3", weight_kind::u64, "bad weight"},
      {"1 2 1.5", weight_kind::u64, "bad weight"},
      {"1 2 18446744073709551616", weight_kind::u64, "overflows uint64"},
      {"1 2 nan", weight_kind::f32, "bad weight"},
      {"1 2 1e300", weight_kind::f32, "overflows float"},
      {"1.0 2", weight_kind::none, "bad source id"},
  };
  for (const auto& c : cases) {
    const auto p = write_file(d, "case.txt", std::string("9 9 1\n") + c.line + "\n8 8 1\n");
    const auto strict = read_all(p, text(c.w));
    ASSERT_TRUE(strict.failed) << c.line;
    EXPECT_EQ(strict.error_line, 2u) << c.line;
    EXPECT_NE(strict.error.find(c.reason), std::string::npos) << c.line << " -> " << strict.error;
    EXPECT_EQ(strict.edges.size(), 1u) << c.line;
    const auto skip = read_all(p, text(c.w, true));
    EXPECT_FALSE(skip.failed) << c.line;
    EXPECT_EQ(skip.bad_lines, 1u) << c.line;
    EXPECT_EQ(skip.edges.size(), 2u) << c.line;
  }
}

TEST(GraphEdgeIo, EmptyAndCommentOnlyFilesGiveZeroEdgesWithoutError) {
  pheap::test::temp_dir d;
  for (const char* content : {"", "# only a comment\n", "\n\n", "%%MatrixMarket x\n"}) {
    const auto p = write_file(d, "e.txt", content);
    const auto r = read_all(p, text());
    EXPECT_FALSE(r.failed) << r.error;
    EXPECT_TRUE(r.edges.empty());
  }
  const auto b = write_file(d, "e.bin", "");
  reader_options o;
  o.format = input_format::binary;
  const auto r = read_all(b, o);
  EXPECT_FALSE(r.failed);
  EXPECT_TRUE(r.edges.empty());
}

TEST(GraphEdgeIo, TruncatedBinaryRecordIsAnErrorWithItsByteOffset) {
  pheap::test::temp_dir d;
  const std::string p = d / "t.bin";
  {
    edge_writer w(p, input_format::binary, weight_kind::none);
    w.write(edge{1, 2, 0});
    w.write(edge{3, 4, 0});
    w.close();
  }
  std::filesystem::resize_file(p, 16 + 16 + 9);
  for (bool skip : {false, true}) {
    reader_options o;
    o.format = input_format::binary;
    o.skip_bad_lines = skip;
    const auto r = read_all(p, o);
    ASSERT_TRUE(r.failed);
    EXPECT_EQ(r.edges.size(), 2u);
    EXPECT_EQ(r.error_offset, 32u);
    EXPECT_NE(r.error.find("truncated binary record: 9 of 16 bytes"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("byte offset 32"), std::string::npos) << r.error;
  }
}

TEST(GraphEdgeIo, WriterAndReaderRoundTripAllFormatsAndWeightKinds) {
  pheap::test::temp_dir d;
  for (auto w : {weight_kind::none, weight_kind::u64, weight_kind::f32}) {
    rmat_params rp;
    rp.scale = 10;
    rp.edge_factor = 4;
    rp.weights = w;
    rp.scramble = true;
    rmat_generator g(rp);
    std::vector<edge> es(g.num_edges());
    g.generate(0, es.size(), es.data());
    for (auto f : {input_format::text, input_format::binary}) {
      const std::string p = d / "rt";
      edge_writer wr(p, f, w);
      wr.write(es.data(), es.size());
      wr.close();
      EXPECT_EQ(wr.bytes_written(), std::filesystem::file_size(p));
      reader_options o;
      o.format = f;
      o.weights = w;
      const auto r = read_all(p, o, 1000);
      ASSERT_FALSE(r.failed) << r.error;
      EXPECT_EQ(r.edges, es) << to_string(w) << " " << to_string(f);
    }
  }
}

TEST(GraphEdgeIo, ResumingAtReportedOffsetAndLineContinuesExactly) {
  pheap::test::temp_dir d;
  std::string content = "# header\n";
  for (int i = 0; i < 500; ++i) content += std::to_string(i) + " " + std::to_string(i * 7) + "\n";
  content += "bad line\n1 1\n";
  const auto p = write_file(d, "r.txt", content);
  const auto all = read_all(p, text(weight_kind::none, true), 1000);
  ASSERT_EQ(all.edges.size(), 501u);
  for (std::size_t cut : {0u, 1u, 17u, 250u, 499u, 500u}) {
    reader_options o = text(weight_kind::none, true);
    o.buffer_bytes = 4096;
    edge_reader r(p, o);
    std::vector<edge> first;
    r.read(first, cut);
    const auto rest = read_all(p, o, 7, r.offset(), r.line());
    first.insert(first.end(), rest.edges.begin(), rest.edges.end());
    EXPECT_EQ(first, all.edges) << "cut " << cut;
  }
  // Line numbers continue after a resume: a bad line is reported with its true number.
  edge_reader r(p, text());
  std::vector<edge> v;
  r.read(v, 100);
  const auto rest = read_all(p, text(), 50, r.offset(), r.line());
  ASSERT_TRUE(rest.failed);
  EXPECT_EQ(rest.error_line, 502u);
}

// A part of an input (what one MPI rank reads: [base, end_offset)) is checksummed from its
// base, not from the input's start: a resume inside it verifies only the part's consumed bytes,
// refuses them changed, and ignores a change before the base. A Matrix Market size line before
// the base stays skipped.
TEST(GraphEdgeIo, APartIsChecksummedFromItsBaseAndAResumeInsideItRefusesItsBytesChanged) {
  pheap::test::temp_dir d;
  std::string content = "%%MatrixMarket matrix coordinate pattern general\n% c\n900 900 800\n";
  for (int i = 0; i < 800; ++i) content += std::to_string(i + 1) + " " + std::to_string(i * 3 + 1) + "\n";
  const auto p = write_file(d, "part.mtx", content);
  const std::uint64_t base = content.find('\n', content.size() / 3) + 1, end = content.find('\n', 2 * content.size() / 3) + 1;
  reader_options o = text();
  o.buffer_bytes = 4096;
  o.end_offset = end;
  input_prefix from_base;
  from_base.how = input_prefix::mode::checksum;
  from_base.base = base;
  std::vector<edge> first, rest;
  edge_reader a(p, o, base, 0, from_base);
  a.read(first, 100);
  const std::uint64_t at = a.offset();
  const auto crc = a.consumed_checksum();
  ASSERT_TRUE(crc.has_value());
  EXPECT_EQ(*crc, pheap::crc32c(content.data() + base, at - base, 0));
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(first.front().src, std::stoull(content.substr(base)));  // the part's first line, not taken for a size line

  input_prefix verify = from_base;
  verify.how = input_prefix::mode::verify;
  verify.crc = *crc;
  {
    edge_reader b(p, o, at, a.line(), verify);  // the part as it was: continues where a stopped
    while (b.read(rest, 64) > 0) {
    }
    EXPECT_EQ(b.consumed_checksum(), pheap::crc32c(content.data() + base, end - base, 0));
    edge_reader whole(p, o, base, 0, from_base);
    std::vector<edge> all;
    while (whole.read(all, 64) > 0) {
    }
    first.insert(first.end(), rest.begin(), rest.end());
    EXPECT_EQ(first, all);
  }
  std::string before_base = content;
  before_base[base - 3] = before_base[base - 3] == '1' ? '2' : '1';  // a digit of the line before the part
  write_file(d, "part.mtx", before_base);
  EXPECT_NO_THROW(edge_reader(p, o, at, a.line(), verify));
  std::string inside = content;
  inside[at - 3] = inside[at - 3] == '1' ? '2' : '1';  // a digit of the part's last consumed line
  write_file(d, "part.mtx", inside);
  try {
    edge_reader c(p, o, at, a.line(), verify);
    ADD_FAILURE() << "a changed part was not refused";
  } catch (const input_changed& e) {
    EXPECT_NE(std::string(e.what()).find("its bytes " + std::to_string(base) + "-" + std::to_string(at - 1) + " are not those read before"),
              std::string::npos) << e.what();
  }
}

TEST(GraphEdgeIo, LinesLongerThanTheBufferAreHandled) {
  pheap::test::temp_dir d;
  const std::string pad(10000, ' ');
  const auto p = write_file(d, "long.txt", "1" + pad + "2\n#" + std::string(20000, 'c') + "\n3 4\n");
  const auto r = read_all(p, text());
  ASSERT_FALSE(r.failed) << r.error;
  EXPECT_EQ(r.edges, (std::vector<edge>{{1, 2, 0}, {3, 4, 0}}));
}

TEST(GraphEdgeIo, MisuseIsRejected) {
  pheap::test::temp_dir d;
  EXPECT_THROW(edge_reader(d / "missing.txt", text()), input_error);
  using pheap::test::code_of;
  constexpr auto invalid = pheap::errc::invalid_argument;
  const auto b = write_file(d, "x.bin", std::string(32, '\0'));
  reader_options o;
  o.format = input_format::binary;
  EXPECT_EQ(code_of([&] { edge_reader(b, o, 5); }), invalid) << "offset inside a record";
  EXPECT_EQ(code_of([] { parse_weight_kind("u32"); }), invalid);
  EXPECT_EQ(code_of([] { parse_input_format("csv"); }), invalid);
}

namespace {

// A text edge list of n edges and its edges.
std::pair<std::string, std::vector<edge>> text_edges(std::size_t n) {
  std::string t = "# a comment\n";
  std::vector<edge> es;
  for (std::size_t i = 0; i < n; ++i) {
    es.push_back({i, (i * 7919) % 1000, 0});
    t += std::to_string(es.back().src) + " " + std::to_string(es.back().dst) + "\n";
  }
  return {t, es};
}

}  // namespace

TEST(GraphEdgeIo, GzipAndZstdInputsAreDetectedByTheirMagicBytesWhateverTheirName) {
  pheap::test::temp_dir d;
  const auto [t, es] = text_edges(5000);
  namespace gt = pheap::graph::test;
  for (const auto& [name, bytes] : std::vector<std::pair<std::string, std::string>>{
           {"a.txt", gt::gzip(t)},            {"b.gz", gt::gzip(t, 3)},
           {"c.edges", gt::zstd(t)},          {"d.zst", gt::zstd(t, 4)},
           {"e", gt::zstd(t, 2, false)}}) {
    const auto r = read_all(write_file(d, name, bytes), text(), 1000);
    EXPECT_FALSE(r.failed) << name << ": " << r.error;
    EXPECT_EQ(r.edges, es) << name;
    EXPECT_EQ(r.end_offset, t.size()) << name << ": offsets count decompressed bytes";
  }
  // Binary records compress the same way.
  const std::string bin = write_file(d, "g.bin", "");
  edge_writer w(bin, input_format::binary, weight_kind::none);
  w.write(es.data(), es.size());
  w.close();
  std::ifstream f(bin, std::ios::binary);
  const std::string raw((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  reader_options o = text();
  o.format = input_format::binary;
  EXPECT_EQ(read_all(write_file(d, "g.bin.zst", gt::zstd(raw, 3)), o, 777).edges, es);
  EXPECT_EQ(read_all(write_file(d, "g.bin.gz", gt::gzip(raw)), o, 777).edges, es);
}

TEST(GraphEdgeIo, ResumingACompressedInputContinuesAtTheDecompressedOffset) {
  pheap::test::temp_dir d;
  const auto [t, es] = text_edges(3000);
  for (const std::string& bytes : {pheap::graph::test::gzip(t, 2), pheap::graph::test::zstd(t, 2)}) {
    const std::string p = write_file(d, "in", bytes);
    reader_options o = text();
    o.buffer_bytes = 4096;
    edge_reader first(p, o);
    std::vector<edge> got;
    first.read(got, 1234);
    ASSERT_EQ(got.size(), 1234u);
    const auto rest = read_all(p, text(), 500, first.offset(), first.line());
    EXPECT_FALSE(rest.failed) << rest.error;
    got.insert(got.end(), rest.edges.begin(), rest.edges.end());
    EXPECT_EQ(got, es);
  }
}

TEST(GraphEdgeIo, CorruptOrTruncatedCompressedInputStopsTheReaderNamingTheFile) {
  pheap::test::temp_dir d;
  const auto [t, es] = text_edges(20000);
  const std::string gz = pheap::graph::test::gzip(t);
  const std::string zs = pheap::graph::test::zstd(t);
  struct c {
    std::string name, bytes, says;
  };
  std::string gz_crc = gz, zs_bad = zs;
  gz_crc[gz.size() - 6] = static_cast<char>(gz_crc[gz.size() - 6] ^ 0x55);  // the CRC32 trailer
  zs_bad[zs.size() / 2] = static_cast<char>(zs_bad[zs.size() / 2] ^ 0x55);
  for (const c& x : std::vector<c>{
           {"gz-truncated", gz.substr(0, gz.size() / 2), "truncated gzip input"},
           {"zst-truncated", zs.substr(0, zs.size() / 2), "truncated zstd input"},
           {"gz-bad-crc", gz_crc, "corrupt gzip data"},
           {"zst-trailing", zs + "garbage!", "corrupt zstd data"},
           // Inside a block the decoder may emit wrong bytes before it notices (gzip and zstd
           // check a member's or frame's checksum at its end): a parse error or a zstd error.
           {"zst-corrupt", zs_bad, ""}}) {
    const std::string p = write_file(d, x.name, x.bytes);
    for (bool skip : {false, true}) {
      const auto r = read_all(p, text(weight_kind::none, skip), 4096);
      EXPECT_TRUE(r.failed) << x.name;
      EXPECT_NE(r.error.find(p), std::string::npos) << r.error;
      EXPECT_NE(r.error.find(x.says), std::string::npos) << x.name << ": " << r.error;
      if (x.says.empty()) continue;
      // What came out before the error is a prefix of the input's edges, in whole lines.
      ASSERT_LE(r.edges.size(), es.size()) << x.name;
      EXPECT_TRUE(std::equal(r.edges.begin(), r.edges.end(), es.begin())) << x.name;
      EXPECT_EQ(r.end_offset, r.error_offset) << x.name << ": stops after the last whole line";
    }
  }
}

TEST(GraphEdgeIo, DecodedSizeIsKnownForPlainAndSizedZstdInputsOnly) {
  pheap::test::temp_dir d;
  const auto [t, es] = text_edges(1000);
  EXPECT_EQ(decoded_size(write_file(d, "p", t)), t.size());
  EXPECT_EQ(decoded_size(write_file(d, "z", pheap::graph::test::zstd(t, 3))), t.size());
  EXPECT_EQ(decoded_size(write_file(d, "u", pheap::graph::test::zstd(t, 1, false))), std::nullopt);
  EXPECT_EQ(decoded_size(write_file(d, "g", pheap::graph::test::gzip(t))), std::nullopt);
  EXPECT_EQ(decoded_size("-"), std::nullopt);
  EXPECT_EQ(decoded_size(d / "missing"), std::nullopt);
}
