// A real full disk: a small ext4 image (truncate -s 64M; mkfs.ext4 -q; mount -o loop in a
// private mount directory) is filled until ENOSPC by (a) a SparseStore write/commit loop and
// (b) `pheap-graph ingest --flush-every` with a small buffer. The failure must be
// errc::no_space (or the poisoned store naming that cause) with the datastore path in the
// message; the last acknowledged watermark must open with exact content; after space is freed
// the datastore continues (the store commits again, the ingestion reruns to exact completion).
//
// Needs root and loop devices: outside CI a missing one skips with the reason, under CI=true
// it fails (PHEAP_REQUIRE_FEATURE).
#include <sys/mount.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

#include "reliability/graph_util.hpp"
#include "reliability/reliability_util.hpp"
#include "store/store_test_util.hpp"

namespace pheap::test {
namespace {

namespace fs = std::filesystem;

// A mounted 64 MiB ext4 image; unmounted and removed in every path (destructor).
class loop_fs {
 public:
  // Empty string on success, else why the facility is unavailable here.
  std::string setup(std::uint64_t bytes = 64ull << 20) {
    if (::geteuid() != 0) return "not root (mount -o loop needs CAP_SYS_ADMIN)";
    if (!fs::exists("/dev/loop-control")) return "no /dev/loop-control";
    img_ = dir_ / "img";
    mnt_ = dir_ / "mnt";
    fs::create_directory(mnt_);
    {
      std::ofstream f(img_);
    }
    fs::resize_file(img_, bytes);
    auto r = run_child({"/sbin/mkfs.ext4", "-q", "-F", img_});
    if (!r.exited(0)) return "mkfs.ext4 failed: " + r.describe();
    r = run_child({"/bin/mount", "-o", "loop", img_, mnt_});
    if (!r.exited(0)) return "mount -o loop failed: " + r.describe();
    mounted_ = true;
    return {};
  }
  ~loop_fs() {
    if (!mounted_) return;
    for (int i = 0; i < 50; ++i) {
      if (::umount(mnt_.c_str()) == 0) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ::umount2(mnt_.c_str(), MNT_DETACH);  // last resort: never leave the mount behind
  }
  const std::string& mnt() const { return mnt_; }

  // Fills the file system with `path` until only about `leave` bytes remain free.
  void fill(const std::string& path, std::uint64_t leave) const {
    const auto space = fs::space(mnt_);
    const std::uint64_t want = space.available > leave ? space.available - leave : 0;
    std::ofstream f(path, std::ios::binary);
    std::vector<char> block(1 << 20, 'x');
    for (std::uint64_t done = 0; done < want;) {
      const std::uint64_t n = std::min<std::uint64_t>(block.size(), want - done);
      f.write(block.data(), static_cast<std::streamsize>(n));
      done += n;
    }
    f.close();
    ::sync();
  }

 private:
  scratch_dir dir_;
  std::string img_, mnt_;
  bool mounted_ = false;
};

bool is_no_space(const error& e) {
  const std::string m = e.what();
  return e.code() == errc::no_space ||
         (e.code() == errc::poisoned && m.find("No space left on device") != std::string::npos);
}

// Store workload with growing footprint: epoch e writes 16 fresh 64 KiB pages.
constexpr std::uint32_t kPageSize = 64 << 10;
constexpr std::uint64_t kPagesPerEpoch = 16;
constexpr std::uint64_t kSeed = 0xF011;

void write_epoch(sparse_store& s, std::uint64_t e) {
  std::vector<std::vector<std::uint8_t>> bufs;
  std::vector<page_write> batch;
  for (std::uint64_t i = 0; i < kPagesPerEpoch; ++i) {
    const std::uint64_t p = (e - 1) * kPagesPerEpoch + i;
    bufs.push_back(pattern(kPageSize, kSeed, p, e));
    batch.push_back({p, bufs.back().data()});
  }
  s.write_pages(batch);
}

std::string check_epochs(sparse_store& s, std::uint64_t w, std::uint64_t pages) {
  if (s.epoch() != w) return "epoch " + std::to_string(s.epoch()) + " != " + std::to_string(w);
  std::vector<std::uint8_t> got(kPageSize);
  for (std::uint64_t p = 0; p < pages; ++p) {
    page_read r{p, got.data()};
    s.read_pages(std::span<const page_read>(&r, 1));
    const std::uint64_t e = p / kPagesPerEpoch + 1;
    const bool written = e <= w;
    if (written ? got != pattern(kPageSize, kSeed, p, e) : !is_zero(got)) {
      return "page " + std::to_string(p) + " wrong at epoch " + std::to_string(w);
    }
  }
  return {};
}

TEST(FullDisk, StoreCommitLoopHitsNoSpaceAndKeepsTheLastWatermarkExact) {
  scenario_timer t;
  loop_fs lfs;
  if (auto why = lfs.setup(); !why.empty()) {
    PHEAP_REQUIRE_FEATURE("loop-mounted ext4 for the full-disk test: " + why);
  }
  const std::string ds = lfs.mnt() + "/ds";
  const std::string filler = lfs.mnt() + "/filler";
  lfs.fill(filler, 24ull << 20);  // ~24 MiB left: the loop reaches ENOSPC within a few seconds
  const std::uint64_t capacity_pages = 4096;  // 256 MiB of address space, far beyond the disk
  store_options o;
  o.capacity = capacity_pages * kPageSize;
  o.page_size = kPageSize;
  o.segment_size = 1 << 20;
  std::uint64_t acked = 0;
  bool hit = false;
  {
    auto s = sparse_store::create(ds, o);
    for (std::uint64_t e = 1; e < capacity_pages / kPagesPerEpoch; ++e) {
      try {
        write_epoch(*s, e);
        acked = s->commit({});
      } catch (const error& err) {
        EXPECT_TRUE(is_no_space(err)) << to_string(err.code()) << ": " << err.what();
        EXPECT_NE(std::string(err.what()).find(ds), std::string::npos) << err.what();
        hit = true;
        break;
      }
    }
  }
  ASSERT_TRUE(hit) << "the disk never filled";
  ASSERT_GT(acked, 2u) << "ENOSPC came before any real progress";
  const std::uint64_t pages = (acked + 2) * kPagesPerEpoch;
  std::uint64_t failures = 0, lost = 0;
  // The last watermark opens read-only (no space needed) with exact content.
  {
    store_options ro;
    ro.read_only = true;
    auto s = sparse_store::open(ds, ro);
    if (s->epoch() < acked) ++lost;
    const auto diff = check_epochs(*s, s->epoch(), pages);
    if (!diff.empty() || (s->epoch() != acked && s->epoch() != acked + 1)) ++failures;
    EXPECT_EQ(diff, "");
    EXPECT_TRUE(s->epoch() == acked || s->epoch() == acked + 1) << s->epoch() << " vs " << acked;
  }
  // Read-write recovery may itself need space: it either works or fails with no_space.
  try {
    auto s = sparse_store::open(ds, store_options{});
    EXPECT_EQ(check_epochs(*s, s->epoch(), pages), "");
  } catch (const error& err) {
    EXPECT_TRUE(is_no_space(err)) << err.what();
  }
  // Free space: the datastore continues where it stopped.
  fs::remove(filler);
  {
    auto s = sparse_store::open(ds, store_options{});
    const std::uint64_t w = s->epoch();
    EXPECT_EQ(check_epochs(*s, w, pages), "");
    write_epoch(*s, w + 1);
    EXPECT_EQ(s->commit({}), w + 1);
  }
  {
    auto s = sparse_store::open(ds, store_options{});
    EXPECT_EQ(check_epochs(*s, s->epoch(), pages), "");
  }
  failures += HasFailure() ? 1 : 0;
  print_result("full_disk_store_commit_loop", acked + 1, failures, lost, t.seconds());
}

// An 8 MiB buffer: eviction runs (format 2 needed it to avoid its journal blow-up, see
// tests/RELIABILITY.md, "journal growth under eviction"; format 3 writes a page in place).
const std::vector<std::string> kGraphOpts{"--buffer-size", "8M", "--flush-every", "5000"};

// Fills the disk under `pheap-graph ingest` and returns its result; `ds` is the datastore.
child_result ingest_until_full(const loop_fs& lfs, const graph_tools& tools, const std::string& input,
                               const std::string& ds,
                               const std::vector<std::string>& opts = kGraphOpts,
                               std::uint64_t leave = 8ull << 20) {
  lfs.fill(lfs.mnt() + "/filler", leave);  // a complete run peaks at ~14 MB on disk
  return tools.ingest(ds, input, opts);
}

TEST(FullDisk, GraphIngestOnAFullDiskKeepsTheLastWatermarkExactAndThenResumesExactlyOnce) {
  scenario_timer t;
  loop_fs lfs;
  if (auto why = lfs.setup(); !why.empty()) {
    PHEAP_REQUIRE_FEATURE("loop-mounted ext4 for the full-disk test: " + why);
  }
  scratch_dir work;
  const graph_tools tools;
  const std::string input = work / "edges.txt";
  tools.generate(input, 14, 16, 99);  // 262144 edges
  const auto all = read_edges(input);
  const std::string ds = lfs.mnt() + "/g";
  const auto r = ingest_until_full(lfs, tools, input, ds);
  // The run must stop with the cause and the datastore named (how it stops — an error exit,
  // or today SIGBUS from a page fault, see the NoSigbus test below — is not this test's point).
  ASSERT_FALSE(r.exited(0)) << "ingest did not fail on a full disk";
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(ds), std::string::npos) << r.err;
  std::uint64_t failures = 0, lost = 0;
  // The last watermark is intact: consistent, exactly the committed prefix of the input.
  ASSERT_TRUE(fs::exists(ds)) << "the datastore was never created: the disk filled too early";
  const auto check = tools.check(ds);
  EXPECT_TRUE(check.exited(0)) << check.describe() << check.out;
  const std::uint64_t n = tools.committed_edges(ds);
  EXPECT_GT(n, 0u);
  EXPECT_LT(n, all.size());
  EXPECT_EQ(diff_edges(tools.exported_edges(ds), sorted_prefix(all, n)), "") << n << " committed edges";
  if (HasFailure() && std::getenv("PHEAP_KEEP_TEST_DIRS") != nullptr) {
    copy_dir(ds, "/dev/shm/pheap-full-disk-post-mortem");
  }
  std::printf("full disk after %llu of %zu edges committed\n", static_cast<unsigned long long>(n), all.size());
  failures += HasFailure() ? 1 : 0;
  // Space back: the same command finishes the job, exactly once.
  fs::remove(lfs.mnt() + "/filler");
  const auto r2 = tools.ingest(ds, input, kGraphOpts);
  ASSERT_TRUE(r2.exited(0)) << r2.describe();
  EXPECT_EQ(tools.committed_edges(ds), all.size());
  EXPECT_EQ(diff_edges(tools.exported_edges(ds), sorted_prefix(all, all.size())), "");
  if (HasFailure()) {
    ++failures;
    ++lost;
  }
  print_result("full_disk_graph_ingest", 1, failures, lost, t.seconds());
}

// REGRESSION (found by this campaign; pager + graph tool): when the page write of an
// eviction fails with ENOSPC, the store is poisoned, the next page fault's read_pages() throws
// errc::poisoned, and the pager resolves the fault with SIGBUS — so `pheap-graph ingest` dies
// by signal 7 instead of reporting no_space from its next flush() and exiting 1.
TEST(FullDisk, GraphIngestOnAFullDiskExitsWithAnErrorInsteadOfDyingBySigbus) {
  loop_fs lfs;
  if (auto why = lfs.setup(); !why.empty()) {
    PHEAP_REQUIRE_FEATURE("loop-mounted ext4 for the full-disk test: " + why);
  }
  scratch_dir work;
  const graph_tools tools;
  const std::string input = work / "edges.txt";
  tools.generate(input, 14, 16, 99);
  // A 2 MiB buffer: eviction writes constantly, so ENOSPC strikes an eviction first. Such an
  // ingestion runs at ~550 edges/s (64 KiB pages, 32 of them), so the disk is left 4 MiB, full
  // after a dozen watermarks and ~10 s: with 8 MiB it took over 2 minutes.
  const auto r = ingest_until_full(lfs, tools, input, lfs.mnt() + "/g",
                                   {"--buffer-size", "2M", "--flush-every", "5000"}, 4ull << 20);
  EXPECT_TRUE(r.exited(1)) << r.describe();
}

}  // namespace
}  // namespace pheap::test
