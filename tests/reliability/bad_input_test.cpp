// Bad input on every file of a datastore: pheap.super, journal-E, every segment-N. Each file
// of a reference datastore (5 epochs of the deterministic workload; journal-5 is the one the
// last commit names) is damaged in a copy — truncated at many offsets, bit-flipped at sampled
// offsets, a 4 KiB block zeroed, replaced by the same file of another datastore or of an older
// epoch, removed, made unreadable — and opened read-only and read-write. The only acceptable
// outcomes: a pheap::error with a specific code whose message names the datastore path, or an
// open at a watermark whose every byte matches the reference for that epoch. Never a crash,
// never silently wrong content.
//
// What the format cannot detect today (segments carry neither checksums nor the datastore's
// uuid; journal records carry no uuid) is proven by the DISABLED_ tests at the end, which fail
// when enabled (--gtest_also_run_disabled_tests); see tests/RELIABILITY.md for the proposed
// format change.
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
// same batches, the same discards — so the journal has exactly the same record layout and
// length — with different bytes. The "other datastore" of the swap cases.
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
  std::string ref, older, foreign, midepoch_journal;
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
    d.midepoch_journal = d.root / "midepoch-journal";
    {
      auto s = sparse_store::create(d.ref, make_opts());
      for (std::uint64_t e = 1; e <= kEpochs; ++e) {
        if (e == kEpochs) {
          // A copy of journal-5 taken in the middle of epoch 5: after a first record (a
          // page that epoch 5 rewrites anyway), before the rest.
          write_one(*s, kWork.written(e)[0], kSeed, workload::scratch_version);
          fs::copy_file(d.ref + "/journal-000000000005", d.midepoch_journal);
          kWork.run_epoch(*s, e);
        } else {
          kWork.run_epoch(*s, e);
        }
        if (e == 3) {
          s.reset();  // quiesce: the checkpoint of epoch 3 is done, the copy is a datastore
          copy_dir(d.ref, d.older);
          s = sparse_store::open(d.ref, make_opts());
        }
      }
    }
    {
      auto s = sparse_store::create(d.foreign, make_opts());
      for (std::uint64_t e = 1; e <= kEpochs; ++e) {
        // The same extra first record of epoch 5 as in the reference: identical layout.
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

  // Opens `dir` read-only and read-write (in that order: read-write recovery writes) and
  // checks the outcome is allowed. `ctx` describes the damage.
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

  // Offsets to flip: every byte of the fixed headers (superblock slots, journal record
  // headers), the CRC fields, and random offsets.
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
      const std::uint64_t committed = size;  // journal-5 holds exactly what commit 5 covers
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
bool is_journal(const std::string& n) { return n.rfind("journal-", 0) == 0; }
bool is_segment(const std::string& n) { return n.rfind("segment-", 0) == 0; }

TEST_F(BadInput, ReferenceDatastoreHasEveryKindOfFile) {
  const auto& f = g_data->files;
  EXPECT_EQ(std::count_if(f.begin(), f.end(), is_super), 1);
  EXPECT_EQ(std::count_if(f.begin(), f.end(), is_journal), 1);
  EXPECT_NE(std::find(f.begin(), f.end(), "journal-000000000005"), f.end());
  EXPECT_GE(std::count_if(f.begin(), f.end(), is_segment), 4);
  auto s = sparse_store::open(g_data->ref, make_opts(true));
  EXPECT_EQ(kWork.check(*s, kEpochs), "");
}

TEST_F(BadInput, DamagedSuperblockGivesASpecificErrorOrAnExactWatermark) {
  campaign("bad_input_superblock", g_data->files, is_super);
}

TEST_F(BadInput, DamagedJournalGivesASpecificErrorOrAnExactWatermark) {
  campaign("bad_input_journal", g_data->files, is_journal);
}

// Segments: truncation and loss are detected (size and bitmap checks); damage inside a
// segment is the CRC table's and the header's business (BitFlipOrZeroedBlock... below).
TEST_F(BadInput, TruncatedOrMissingSegmentGivesASpecificError) {
  scenario_timer timer;
  tally t;
  for (const auto& name : g_data->files) {
    if (!is_segment(name)) continue;
    for (std::uint64_t off : std::initializer_list<std::uint64_t>{0, 1, 4095, 4096, 8192, kSegmentSize - 1,
                              kSegmentSize + 1, kSegmentSize + 4096, kSegmentSize + 8192,
                              kSegmentSize * 2}) {
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
  EXPECT_EQ(t.recovered, 0u) << "a segment of the wrong size or a missing one went unnoticed";
  print_result("bad_input_segment_size_or_missing", t.cases, t.failures, 0, timer.seconds());
}

TEST_F(BadInput, FilesSwappedInFromAnOlderEpochOrAnotherDatastoreThatTheFormatCanCheck) {
  scenario_timer timer;
  tally t;
  // pheap.super of epoch 3: its epoch needs journal-3, long gone → corrupt.
  {
    scratch_dir d;
    const auto v = victim(d);
    fs::copy_file(g_data->older + "/pheap.super", v + "/pheap.super",
                  fs::copy_options::overwrite_existing);
    expect_error_or_exact(v, "pheap.super of epoch 3", t);
    EXPECT_EQ(t.recovered, 0u);
  }
  // journal-5 copied in the middle of epoch 5: shorter than the commit says → corrupt.
  {
    scratch_dir d;
    const auto v = victim(d);
    fs::copy_file(g_data->midepoch_journal, v + "/journal-000000000005",
                  fs::copy_options::overwrite_existing);
    expect_error_or_exact(v, "journal-5 from the middle of epoch 5", t);
  }
  // journal-3 of the older copy renamed journal-5: records of epoch 3 → corrupt.
  {
    scratch_dir d;
    const auto v = victim(d);
    fs::copy_file(g_data->older + "/journal-000000000003", v + "/journal-000000000005",
                  fs::copy_options::overwrite_existing);
    expect_error_or_exact(v, "journal-3 renamed journal-5", t);
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
  std::vector<std::string> targets = g_data->files;
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

// ---- format 2: segment checksums, segment and journal identity ----------------------------
// (These were the two DISABLED_FormatGap_* tests of format 1, which served such damage as
// data; see tests/RELIABILITY.md, finding 6.)

// Every 4 KiB block of every segment file zeroed — pages, both header slots, the CRC table —
// and bits flipped at sampled offsets in each of those areas: a specific error, or an exact
// watermark (a zeroed hole, a zeroed header slot whose twin still carries the digest's epoch).
TEST_F(BadInput, BitFlipOrZeroedBlockAnywhereInASegmentIsDetectedOrHarmless) {
  scenario_timer timer;
  tally t;
  std::uint64_t seg_blocks = 0;
  for (const auto& name : g_data->files) {
    if (!is_segment(name)) continue;
    const std::uint64_t size = fs::file_size(g_data->ref + "/" + name);
    std::vector<std::uint64_t> offsets = {100, 5000, 9000, 15000};         // pages
    for (std::uint64_t o : {8ull, 16ull, 40ull, 48ull, 4092ull}) {       // header slot fields
      offsets.push_back(kSegmentSize + o);
      offsets.push_back(kSegmentSize + 4096 + o);
    }
    const std::uint64_t table = kSegmentSize + 8192;  // entries of the segment's 4 pages, then samples
    for (std::uint64_t o = 0; o < 4 * (kSegmentSize / kPageSize); ++o) offsets.push_back(table + o);
    for (std::uint64_t o = table + 1024; o < size; o += 1024) offsets.push_back(o);
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

// Any file of the foreign datastore (same geometry, same record layout, other bytes and uuid)
// or any segment of the older copy (epoch 3) copied over the reference's: a specific error,
// or the exact content (an older segment no epoch since 3 touched is the same file). A
// foreign pheap.super must never be accepted under the other datastore's identity.
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
    if (src == g_data->foreign) {
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
