// Bad input on every file of a datastore: pheap.super, pheap.map, every segment-N. Each file
// of a reference datastore (5 epochs of the deterministic workload) is damaged in a copy —
// truncated at many offsets, bit-flipped at sampled offsets, a 4 KiB block zeroed, replaced by
// the same file of another datastore or of an older epoch, removed, made unreadable, replaced
// by a FIFO, a directory or a device — and
// opened read-only and read-write, and every page read. The only acceptable outcomes: a
// pheap::error with a specific code whose message names the datastore path (at open or at the
// first read of what the damage touched: format 3 loads map blocks and segments lazily), or a
// watermark whose every byte matches the reference for that epoch. Never a crash, never
// silently wrong content. Damage to what the committed map does not name (a segment holding no
// committed page, a home no map uses) is harmless by design.
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "reliability/reliability_util.hpp"
#include "store/store_test_util.hpp"

namespace pheap::test {
namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kSeed = 0xBAD1;
constexpr std::uint64_t kPages = 64;
constexpr std::uint32_t kPageSize = 4096;
constexpr std::uint64_t kSegmentSize = 16384;
constexpr std::uint64_t kEpochs = 5;
constexpr uid_t kNobody = 65534;

const workload kWork{kSeed, kPages};

store_options make_opts(bool read_only = false) {
  store_options o;
  o.capacity = kPages * kPageSize;
  o.page_size = kPageSize;
  o.segment_size = kSegmentSize;
  o.read_only = read_only;
  o.engine = io::make_posix_engine();
  return o;
}

// Like workload::write_epoch, but page contents come from `content_seed`: the same pages, the
// same batches, the same discards — so the map and the segments have exactly the same layout —
// with different bytes. The "other datastore" of the swap cases.
void write_epoch_with_content(sparse_store& s, std::uint64_t e, std::uint64_t content_seed) {
  const auto pages_e = kWork.written(e);
  std::vector<std::vector<std::uint8_t>> bufs;
  for (std::uint64_t p : pages_e) {
    bufs.push_back(pattern(kPageSize, content_seed, p, workload::scratch_version + e));
  }
  {
    std::vector<page_write> batch;
    for (std::size_t i = 0; i < pages_e.size(); ++i) batch.push_back({pages_e[i], bufs[i].data()});
    s.write_pages(batch);
  }
  if (auto d = kWork.discarded(e)) s.discard(d->first, d->second);
  for (std::size_t i = 0; i < pages_e.size(); ++i) {
    fill_pattern(bufs[i].data(), kPageSize, content_seed, pages_e[i], e);
  }
  for (std::size_t i = 0; i < pages_e.size(); i += 5) {
    std::vector<page_write> batch;
    for (std::size_t k = i; k < std::min(pages_e.size(), i + 5); ++k) {
      batch.push_back({pages_e[k], bufs[k].data()});
    }
    s.write_pages(batch);
  }
  s.commit(kWork.root(e));
}

// The reference datastore and its relatives, built once for the whole suite.
struct fixture_data {
  scratch_dir root;
  std::string ref, older, foreign, midepoch_map;
  std::vector<std::string> files;  // names in ref
};

fixture_data* g_data = nullptr;

class BadInput : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    g_data = new fixture_data;
    auto& d = *g_data;
    ::chmod(d.root.path().c_str(), 0755);  // the uid-65534 cases must reach their copies
    d.ref = d.root / "ref";
    d.older = d.root / "older";
    d.foreign = d.root / "foreign";
    d.midepoch_map = d.root / "midepoch-map";
    {
      auto s = sparse_store::create(d.ref, make_opts());
      for (std::uint64_t e = 1; e <= kEpochs; ++e) {
        if (e == kEpochs) {
          // pheap.map as it is in the middle of epoch 5: the map of epoch 4, nothing of 5.
          write_one(*s, kWork.written(e)[0], kSeed, workload::scratch_version);
          fs::copy_file(d.ref + "/pheap.map", d.midepoch_map);
        }
        kWork.run_epoch(*s, e);
        if (e == 3) {
          s.reset();
          copy_dir(d.ref, d.older);
          s = sparse_store::open(d.ref, make_opts());
        }
      }
    }
    {
      auto s = sparse_store::create(d.foreign, make_opts());
      for (std::uint64_t e = 1; e <= kEpochs; ++e) {
        if (e == kEpochs) write_one(*s, kWork.written(e)[0], kSeed + 1, workload::scratch_version);
        write_epoch_with_content(*s, e, kSeed + 1);
      }
    }
    for (const auto& e : fs::directory_iterator(d.ref)) d.files.push_back(e.path().filename().string());
    std::sort(d.files.begin(), d.files.end());
  }
  static void TearDownTestSuite() {
    delete g_data;
    g_data = nullptr;
  }

  struct tally {
    std::uint64_t cases = 0, failures = 0, errors = 0, recovered = 0;
    std::set<std::string> codes;
  };

  // Opens `dir` read-only and read-write and reads every page; checks the outcome is allowed.
  // `ctx` describes the damage.
  static void expect_error_or_exact(const std::string& dir, const std::string& ctx, tally& t) {
    ++t.cases;
    for (const bool ro : {true, false}) {
      const std::string what = ctx + (ro ? " [read-only]" : " [read-write]");
      try {
        auto s = sparse_store::open(dir, make_opts(ro));
        const std::uint64_t e = s->epoch();
        const std::string diff = e > kEpochs ? "epoch " + std::to_string(e) + " never existed"
                                             : kWork.check(*s, e);
        if (!diff.empty()) {
          ++t.failures;
          ADD_FAILURE() << what << ": opened at epoch " << e << " with wrong content: " << diff;
          return;
        }
        ++t.recovered;
      } catch (const error& err) {
        const std::string msg = err.what();
        const bool specific = err.code() == errc::corrupt || err.code() == errc::not_a_datastore ||
                              err.code() == errc::not_found || err.code() == errc::newer_format ||
                              err.code() == errc::older_format;
        if (!specific || msg.find(dir) == std::string::npos) {
          ++t.failures;
          ADD_FAILURE() << what << ": unspecific error " << to_string(err.code()) << ": " << msg;
          return;
        }
        ++t.errors;
        t.codes.insert(to_string(err.code()));
      }
    }
  }

  // A fresh copy of the reference.
  static std::string victim(const scratch_dir& d) {
    const std::string v = d / "ds";
    copy_dir(g_data->ref, v);
    return v;
  }

  static std::uint64_t file_size(const std::string& p) { return fs::file_size(p); }

  static void flip_bit(const std::string& p, std::uint64_t off, int bit) {
    std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(off));
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ (1 << bit));
    f.seekp(static_cast<std::streamoff>(off));
    f.write(&c, 1);
  }

  static void zero_block(const std::string& p, std::uint64_t block) {
    std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
    const std::uint64_t size = fs::file_size(p);
    const std::uint64_t off = block * 4096;
    const std::vector<char> z(std::min<std::uint64_t>(4096, size - off), 0);
    f.seekp(static_cast<std::streamoff>(off));
    f.write(z.data(), static_cast<std::streamsize>(z.size()));
  }

  // Truncation offsets for a file of `size` bytes: the edges, every structure boundary we know
  // of, every 4 KiB boundary (files here are small), and a few odd offsets.
  static std::vector<std::uint64_t> cut_offsets(std::uint64_t size) {
    std::set<std::uint64_t> s = {0, 1, 7, 8, 31, 32, 39, 40, 72, 2120, 4095, 8187, 8188, 8191,
                                 8192, 8193, 16383};
    for (std::uint64_t o = 4096; o < size; o += 4096) s.insert(o);
    for (std::uint64_t o = 4096; o < size; o += 4096) s.insert(o - 1);
    std::mt19937_64 rng(size);
    for (int i = 0; i < 8 && size > 0; ++i) s.insert(rng() % size);
    std::vector<std::uint64_t> v;
    for (auto o : s) {
      if (o < size) v.push_back(o);
    }
    return v;
  }

  // Offsets to flip: every byte of the fixed headers (superblock slots, the directory header
  // and its first entries), the CRC fields, and random offsets.
  static std::vector<std::uint64_t> flip_offsets(const std::string& name, std::uint64_t size,
                                                 std::uint64_t committed) {
    std::set<std::uint64_t> s;
    std::mt19937_64 rng(size ^ 0xF11B);
    if (name == "pheap.super") {
      for (std::uint64_t slot : {0u, 8192u}) {
        for (std::uint64_t o = 0; o < 80; ++o) s.insert(slot + o);
        for (std::uint64_t o = 8188; o < 8192; ++o) s.insert(slot + o);
        for (int i = 0; i < 24; ++i) s.insert(slot + 72 + rng() % (8188 - 72));
      }
    } else {
      for (std::uint64_t o = 0; o < std::min<std::uint64_t>(size, 96); ++o) s.insert(o);
      for (int i = 0; i < 64; ++i) s.insert(rng() % committed);
      for (int i = 0; i < 4 && size > committed; ++i) s.insert(committed + rng() % (size - committed));
    }
    return {s.begin(), s.end()};
  }

  // Damages only `name`, one case per call of `damage`, and tallies.
  void campaign(const std::string& scenario, const std::vector<std::string>& names,
                bool (*accept)(const std::string&)) {
    scenario_timer timer;
    tally t;
    for (const auto& name : names) {
      if (!accept(name)) continue;
      const std::string ref_file = g_data->ref + "/" + name;
      const std::uint64_t size = file_size(ref_file);
      const std::uint64_t committed = size;
      for (std::uint64_t off : cut_offsets(size)) {
        scratch_dir d;
        const auto v = victim(d);
        fs::resize_file(v + "/" + name, off);
        expect_error_or_exact(v, name + " truncated to " + std::to_string(off), t);
      }
      for (std::uint64_t off : flip_offsets(name, size, committed)) {
        scratch_dir d;
        const auto v = victim(d);
        flip_bit(v + "/" + name, off, static_cast<int>(off % 8));
        expect_error_or_exact(v, name + " bit " + std::to_string(off % 8) + " flipped at " +
                                     std::to_string(off), t);
      }
      for (std::uint64_t b = 0; b * 4096 < size; ++b) {
        scratch_dir d;
        const auto v = victim(d);
        zero_block(v + "/" + name, b);
        expect_error_or_exact(v, name + " 4 KiB block " + std::to_string(b) + " zeroed", t);
      }
      {
        scratch_dir d;
        const auto v = victim(d);
        fs::remove(v + "/" + name);
        expect_error_or_exact(v, name + " missing", t);
      }
      if (HasFailure()) break;
    }
    EXPECT_GT(t.errors, 0u);
    std::string codes;
    for (const auto& c : t.codes) codes += c + " ";
    std::printf("%s: %llu cases, %llu open outcomes as errors (%s), %llu as exact watermarks\n",
                scenario.c_str(), static_cast<unsigned long long>(t.cases),
                static_cast<unsigned long long>(t.errors), codes.c_str(),
                static_cast<unsigned long long>(t.recovered));
    print_result(scenario, t.cases, t.failures, 0, timer.seconds());
  }
};

bool is_super(const std::string& n) { return n == "pheap.super"; }
bool is_map(const std::string& n) { return n == "pheap.map"; }
bool is_segment(const std::string& n) { return n.rfind("segment-", 0) == 0; }

// Segments the last commit names a page in (the others hold no committed page: never read).
bool is_named_segment(const std::string& n) {
  if (!is_segment(n)) return false;
  const std::uint64_t seg = std::stoull(n.substr(8));
  const auto v = kWork.versions_at(kEpochs);
  const std::uint64_t pps = kSegmentSize / kPageSize;
  for (std::uint64_t p = seg * pps; p < (seg + 1) * pps && p < kPages; ++p) {
    if (v[p] != 0) return true;
  }
  return false;
}
// The files a read of the whole last commit reads.
bool is_read(const std::string& n) { return is_super(n) || is_map(n) || is_named_segment(n); }

TEST_F(BadInput, ReferenceDatastoreHasEveryKindOfFile) {
  const auto& f = g_data->files;
  EXPECT_EQ(std::count_if(f.begin(), f.end(), is_super), 1);
  EXPECT_EQ(std::count_if(f.begin(), f.end(), is_map), 1);
  EXPECT_GE(std::count_if(f.begin(), f.end(), is_named_segment), 4);
  auto s = sparse_store::open(g_data->ref, make_opts(true));
  EXPECT_EQ(kWork.check(*s, kEpochs), "");
}

TEST_F(BadInput, DamagedSuperblockGivesASpecificErrorOrAnExactWatermark) {
  campaign("bad_input_superblock", g_data->files, is_super);
}

TEST_F(BadInput, DamagedPageMapGivesASpecificErrorOrAnExactWatermark) {
  campaign("bad_input_page_map", g_data->files, is_map);
}

// Segments: a segment the last commit names, truncated, extended or missing, is detected at the
// first read of one of its pages; damage inside a segment is the map's checksums' and the
// identity header's business (BitFlipOrZeroedBlock... below).
TEST_F(BadInput, TruncatedExtendedOrMissingSegmentGivesASpecificError) {
  scenario_timer timer;
  tally t;
  for (const auto& name : g_data->files) {
    if (!is_named_segment(name)) continue;
    for (std::uint64_t off : std::initializer_list<std::uint64_t>{
             0, 1, 4095, 4096, 8192, kSegmentSize - 1, kSegmentSize + 1, kSegmentSize + 4096,
             2 * kSegmentSize, 2 * kSegmentSize + 4095, 2 * kSegmentSize + 4097, 3 * kSegmentSize}) {
      scratch_dir d;
      const auto v = victim(d);
      fs::resize_file(v + "/" + name, off);
      expect_error_or_exact(v, name + " resized to " + std::to_string(off), t);
    }
    scratch_dir d;
    const auto v = victim(d);
    fs::remove(v + "/" + name);
    expect_error_or_exact(v, name + " missing", t);
  }
  EXPECT_GT(t.cases, 0u);
  EXPECT_EQ(t.recovered, 0u) << "a segment of the wrong size or a missing one went unnoticed";
  print_result("bad_input_segment_size_or_missing", t.cases, t.failures, 0, timer.seconds());
}

TEST_F(BadInput, FilesSwappedInFromAnOlderEpochThatTheFormatCanCheck) {
  scenario_timer timer;
  tally t;
  // pheap.super of epoch 3: epochs 4 and 5 reused the homes of its directory → corrupt.
  // pheap.map of epoch 3, or of the middle of epoch 5: the directory of epoch 5 is not in it.
  for (const auto& [src, name, what] :
       std::initializer_list<std::tuple<std::string, std::string, std::string>>{
           {g_data->older + "/pheap.super", "pheap.super", "pheap.super of epoch 3"},
           {g_data->older + "/pheap.map", "pheap.map", "pheap.map of epoch 3"},
           {g_data->midepoch_map, "pheap.map", "pheap.map from the middle of epoch 5"}}) {
    scratch_dir d;
    const auto v = victim(d);
    fs::copy_file(src, v + "/" + name, fs::copy_options::overwrite_existing);
    expect_error_or_exact(v, what, t);
  }
  EXPECT_EQ(t.recovered, 0u);
  EXPECT_EQ(t.failures, 0u);
  print_result("bad_input_swapped_checkable", t.cases, t.failures, 0, timer.seconds());
}

// Permissions: root bypasses them, so as root the opens run in a child as uid/gid 65534 that
// owns the copy (as any other user, in a child under that user's own uid) — with one file (or
// the directory) chmod 000. The error is specific (io, EACCES) and names the file; never a
// crash, never a silent open with missing data.
TEST_F(BadInput, UnreadableFileOrDirectoryGivesAPermissionErrorNamingIt) {
  const bool root = ::geteuid() == 0;
  scenario_timer timer;
  std::uint64_t cases = 0, failures = 0;
  std::vector<std::string> targets;  // the files a read of the last commit reads
  std::copy_if(g_data->files.begin(), g_data->files.end(), std::back_inserter(targets), is_read);
  targets.push_back("");  // the directory itself
  for (const auto& name : targets) {
    for (const bool ro : {true, false}) {
      scratch_dir d;
      ::chmod(d.path().c_str(), 0755);
      const auto v = victim(d);
      if (root) {
        for (const auto& e : fs::recursive_directory_iterator(v)) {
          ASSERT_EQ(::chown(e.path().c_str(), kNobody, kNobody), 0);
        }
        ASSERT_EQ(::chown(v.c_str(), kNobody, kNobody), 0);
      }
      const std::string target = name.empty() ? v : v + "/" + name;
      ASSERT_EQ(::chmod(target.c_str(), 0), 0);
      int pipefd[2];
      ASSERT_EQ(::pipe(pipefd), 0);
      const pid_t pid = ::fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        ::close(pipefd[0]);
        std::string msg;
        int rc = 0;
        if (root && (::setgroups(0, nullptr) != 0 || ::setgid(kNobody) != 0 || ::setuid(kNobody) != 0)) {
          msg = "setuid failed";
          rc = 3;
        } else {
          try {
            auto s = sparse_store::open(v, make_opts(ro));
            msg = "opened at epoch " + std::to_string(s->epoch()) + ": " + kWork.check(*s, s->epoch());
            rc = 1;
          } catch (const error& e) {
            msg = std::string(to_string(e.code())) + " errno=" + std::to_string(e.sys_errno()) +
                  " " + e.what();
            rc = 2;
          }
        }
        if (::write(pipefd[1], msg.data(), msg.size()) < 0) rc = 4;
        ::_exit(rc);
      }
      ::close(pipefd[1]);
      std::string msg;
      char buf[1024];
      for (ssize_t n; (n = ::read(pipefd[0], buf, sizeof buf)) > 0;) msg.append(buf, static_cast<std::size_t>(n));
      ::close(pipefd[0]);
      int status = 0;
      ::waitpid(pid, &status, 0);
      ::chmod(target.c_str(), name.empty() ? 0755 : 0644);  // so a non-root run can clean up
      ++cases;
      const std::string ctx = (name.empty() ? std::string("directory") : name) + " chmod 000" +
                              (ro ? " [read-only]" : " [read-write]");
      const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 2 &&
                      msg.find("errno=" + std::to_string(EACCES)) != std::string::npos &&
                      msg.find(target) != std::string::npos;
      if (!ok) {
        ++failures;
        ADD_FAILURE() << ctx << ": status " << status << ": " << msg;
      }
    }
  }
  print_result("bad_input_permissions", cases, failures, 0, timer.seconds());
}

// ---- the page map's checksums and the identity headers ------------------------------------

// Every 4 KiB block of every segment file zeroed — pages of both homes, the identity header —
// and bits flipped at sampled offsets in each of those areas: a specific error, or an exact
// watermark (damage to a home no map names, or to a segment no committed page lives in).
TEST_F(BadInput, BitFlipOrZeroedBlockAnywhereInASegmentIsDetectedOrHarmless) {
  scenario_timer timer;
  tally t;
  std::uint64_t seg_blocks = 0;
  for (const auto& name : g_data->files) {
    if (!is_segment(name)) continue;
    const std::uint64_t size = fs::file_size(g_data->ref + "/" + name);
    std::vector<std::uint64_t> offsets = {100, 5000, 9000, 15000};  // home 0
    for (std::uint64_t o : {100ull, 5000ull, 9000ull, 15000ull}) offsets.push_back(kSegmentSize + o);
    for (std::uint64_t o : {8ull, 16ull, 32ull, 40ull, 4092ull}) offsets.push_back(2 * kSegmentSize + o);
    for (std::uint64_t off : offsets) {
      scratch_dir d;
      const auto v = victim(d);
      flip_bit(v + "/" + name, off, 3);
      expect_error_or_exact(v, name + " bit flipped at " + std::to_string(off), t);
    }
    for (std::uint64_t b = 0; b < size / 4096; ++b, ++seg_blocks) {
      scratch_dir d;
      const auto v = victim(d);
      zero_block(v + "/" + name, b);
      expect_error_or_exact(v, name + " block " + std::to_string(b) + " zeroed", t);
    }
  }
  EXPECT_GT(seg_blocks, 0u) << "the reference datastore has no segment";
  EXPECT_GT(t.errors, 0u) << "no damage was detected at all";
  EXPECT_EQ(t.failures, 0u);
  print_result("bad_input_segment_contents", t.cases, t.failures, 0, timer.seconds());
}

// Any file of the foreign datastore (same geometry, same layout, other bytes and uuid) or any
// segment of the older copy (epoch 3) copied over the reference's: a specific error, or the
// exact content (an older segment whose committed pages epochs 4 and 5 did not move holds
// them still). A foreign file the last commit reads must never be accepted.
// Something that is not a regular file where a datastore keeps one — a FIFO (whose open would
// wait for a writer for ever), a directory, a character device (/dev/zero, /dev/null through a
// symlink) — in place of pheap.super, pheap.map or any segment: a specific error naming it
// at once, or (a segment no committed page lives in) the exact watermark. Each case runs
// under a 60 s alarm: a blocking open ends the test instead of hanging it.
TEST_F(BadInput, NonRegularFileWhereADatastoreFileBelongsIsRefusedAtOnce) {
  scenario_timer timer;
  tally t;
  struct kind {
    const char* name;
    void (*make)(const std::string&);
  };
  const kind kinds[] = {
      {"FIFO", [](const std::string& p) { ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0); }},
      {"directory", [](const std::string& p) { fs::create_directory(p); }},
      {"/dev/zero", [](const std::string& p) { fs::create_symlink("/dev/zero", p); }},
      {"/dev/null", [](const std::string& p) { fs::create_symlink("/dev/null", p); }},
  };
  for (const auto& name : g_data->files) {
    for (const kind& k : kinds) {
      scratch_dir d;
      const auto v = victim(d);
      fs::remove(v + "/" + name);
      k.make(v + "/" + name);
      ::alarm(60);  // SIGALRM ends the process: a hang is a failure, never a stuck suite
      expect_error_or_exact(v, name + " replaced by a " + k.name, t);
      ::alarm(0);
    }
    if (HasFailure()) break;
  }
  EXPECT_GT(t.errors, 0u);
  EXPECT_EQ(t.codes, std::set<std::string>{"corrupt"}) << "a non-regular file is damage";
  std::printf("bad_input_non_regular_file: %llu cases, %llu open outcomes as errors, %llu as exact watermarks\n",
              static_cast<unsigned long long>(t.cases), static_cast<unsigned long long>(t.errors),
              static_cast<unsigned long long>(t.recovered));
  print_result("bad_input_non_regular_file", t.cases, t.failures, 0, timer.seconds());
}

TEST_F(BadInput, FileSwappedInFromAnotherDatastoreOrAnOlderSegmentIsDetected) {
  scenario_timer timer;
  tally t;
  std::vector<std::pair<std::string, std::string>> swaps;  // (source dir, file name)
  for (const auto& name : g_data->files) {
    if (fs::exists(g_data->foreign + "/" + name)) swaps.emplace_back(g_data->foreign, name);
    if (is_segment(name) && fs::exists(g_data->older + "/" + name)) swaps.emplace_back(g_data->older, name);
  }
  std::uint64_t foreign_swaps = 0;
  for (const auto& [src, name] : swaps) {
    scratch_dir d;
    const auto v = victim(d);
    fs::copy_file(src + "/" + name, v + "/" + name, fs::copy_options::overwrite_existing);
    const std::uint64_t before = t.recovered;
    expect_error_or_exact(v, name + " from " + src, t);
    if (src == g_data->foreign && is_read(name)) {
      ++foreign_swaps;
      EXPECT_EQ(t.recovered, before) << name << " of another datastore was accepted";
    }
  }
  EXPECT_GT(foreign_swaps, 2u);
  EXPECT_EQ(t.failures, 0u);
  print_result("bad_input_swapped_any_file", t.cases, t.failures, 0, timer.seconds());
}

}  // namespace
}  // namespace pheap::test
