// Snapshots on real file systems: loop-mounted XFS (mkfs.xfs -m reflink=1) and Btrfs images,
// where engine::clone_file must take the reflink path (FICLONE), and ext4, where it must fall
// back to a sparse copy. A heap datastore holds real data (24 MiB of base arrays, a sparsely
// written 8 MiB block, records with containers); writer threads keep constructing, destroying,
// overwriting and flushing (snapshot_workload.hpp) while snapshots are taken. Proven:
//   (a) XFS/Btrfs: right after each snapshot, >= 90 % of the data extents of its segment files
//       are FIEMAP_EXTENT_SHARED, and (XFS) the file system's used blocks grow by < 10 % of the
//       data for a quiesced snapshot: the reflink path was really taken;
//   (b) ext4: nothing is shared, the copy allocates about what the source allocates (0.9-1.1x)
//       and far less than its apparent size, and its data ranges lie inside the source's
//       (holes stay holes);
//   (c) every snapshot opens at one watermark whose content is exactly a state inside that
//       watermark's window (the writers' acknowledgement protocol), passes manager::check(),
//       and is independent: the source overwriting its base data afterwards does not change
//       any snapshot, and writing into a snapshot does not change the source.
// Plus a crash variant: a child killed by SIGKILL while it takes snapshots on XFS leaves every
// destination absent or complete, acknowledged snapshots intact, and a retry succeeds.
//
// Images, loop devices and mounts are released in every path (destructors), even on failure.
// Needs root, loop devices, the mkfs tools and the file systems in the kernel: outside CI a
// missing piece skips with the reason, under CI=true it fails (PHEAP_REQUIRE_FEATURE).
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdarg>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "common/test_util.hpp"
#include "pheap/io.hpp"
#include "pheap/sparse_store.hpp"
#include "reliability/reliability_util.hpp"
#include "reliability/snapshot_workload.hpp"

namespace pheap::test {
namespace {

namespace fs = std::filesystem;
using namespace pheap::test::snap;

// ---- loop-mounted images --------------------------------------------------------------------

enum class fs_kind { xfs, btrfs, ext4 };
const char* name_of(fs_kind k) { return k == fs_kind::xfs ? "xfs" : k == fs_kind::btrfs ? "btrfs" : "ext4"; }

std::string find_tool(const std::string& name) {
  for (const char* dir : {"/usr/sbin", "/sbin", "/usr/bin", "/bin"}) {
    const std::string p = std::string(dir) + "/" + name;
    if (::access(p.c_str(), X_OK) == 0) return p;
  }
  return {};
}

bool kernel_has(const std::string& fstype) {
  std::ifstream f("/proc/filesystems");
  std::string line;
  while (std::getline(f, line)) {
    if (line.size() >= fstype.size() && line.compare(line.size() - fstype.size(), fstype.size(), fstype) == 0 &&
        (line.size() == fstype.size() || std::isspace(static_cast<unsigned char>(line[line.size() - fstype.size() - 1])))) {
      return true;
    }
  }
  return false;
}

// A sparse image file, its loop device and its mount; released in reverse order by the
// destructor whatever happened (umount retried, then lazily detached; loop device detached;
// the image removed with its scratch directory).
class loop_image {
 public:
  // Empty string on success, else why the facility is unavailable here.
  std::string setup(fs_kind kind, std::uint64_t bytes) {
    kind_ = kind;
    if (::geteuid() != 0) return "not root (loop devices and mount need CAP_SYS_ADMIN)";
    if (!fs::exists("/dev/loop-control")) return "no /dev/loop-control";
    const std::string type = name_of(kind);
    const std::string mkfs = find_tool("mkfs." + type);
    if (mkfs.empty()) return "mkfs." + type + " not installed (scripts/deps.sh installs it)";
    const std::string losetup = find_tool("losetup");
    if (losetup.empty()) return "losetup not installed";
    if (!kernel_has(type)) {
      run_child({find_tool("modprobe").empty() ? "/sbin/modprobe" : find_tool("modprobe"), type});
      if (!kernel_has(type)) return "the kernel has no " + type + " file system";
    }
    img_ = dir_ / "img";
    mnt_ = dir_ / "mnt";
    fs::create_directory(mnt_);
    { std::ofstream f(img_); }
    // XFS refuses file systems below 300 MB; the image is sparse, only what is written counts.
    fs::resize_file(img_, std::max<std::uint64_t>(bytes, 512ull << 20));
    std::vector<std::string> cmd;
    switch (kind) {
      case fs_kind::xfs: cmd = {mkfs, "-q", "-f", "-m", "reflink=1", img_}; break;
      case fs_kind::btrfs: cmd = {mkfs, "-q", "-f", img_}; break;
      case fs_kind::ext4: cmd = {mkfs, "-q", "-F", img_}; break;
    }
    auto r = run_child(cmd);
    if (!r.exited(0)) return "mkfs." + type + " failed: " + r.describe();
    r = run_child({losetup, "--find", "--show", img_});
    if (!r.exited(0)) return "losetup failed: " + r.describe();
    dev_ = r.out.substr(0, r.out.find('\n'));
    losetup_ = losetup;
    if (::mount(dev_.c_str(), mnt_.c_str(), type.c_str(), 0, nullptr) != 0) {
      return "mount -t " + type + " " + dev_ + " failed: " + std::strerror(errno);
    }
    mounted_ = true;
    return {};
  }

  ~loop_image() {
    if (mounted_) {
      bool done = false;
      for (int i = 0; i < 50 && !done; ++i) {
        done = ::umount(mnt_.c_str()) == 0;
        if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (!done) ::umount2(mnt_.c_str(), MNT_DETACH);  // never leave the mount behind
    }
    if (!dev_.empty()) run_child({losetup_, "-d", dev_});
  }

  const std::string& mnt() const { return mnt_; }
  fs_kind kind() const { return kind_; }

  // Bytes in use on the file system, after writing back everything dirty.
  std::uint64_t used_bytes() const {
    const int fd = ::open(mnt_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
      ::syncfs(fd);
      ::close(fd);
    }
    struct statfs st {};
    if (::statfs(mnt_.c_str(), &st) != 0) throw std::runtime_error("statfs " + mnt_);
    return (st.f_blocks - st.f_bfree) * static_cast<std::uint64_t>(st.f_bsize);
  }

 private:
  scratch_dir dir_;  // destroyed after the destructor body: image removed last
  fs_kind kind_ = fs_kind::ext4;
  std::string img_, mnt_, dev_, losetup_;
  bool mounted_ = false;
};

// ---- extents and holes ----------------------------------------------------------------------

struct usage {
  std::uint64_t apparent = 0;   // st_size
  std::uint64_t allocated = 0;  // st_blocks * 512
  std::uint64_t extent_bytes = 0, shared_bytes = 0;  // FIEMAP
  usage& operator+=(const usage& o) {
    apparent += o.apparent;
    allocated += o.allocated;
    extent_bytes += o.extent_bytes;
    shared_bytes += o.shared_bytes;
    return *this;
  }
  double shared_fraction() const { return extent_bytes ? double(shared_bytes) / double(extent_bytes) : 0.0; }
};

struct fd_closer {
  int fd;
  ~fd_closer() {
    if (fd >= 0) ::close(fd);
  }
};

usage file_usage(const std::string& path) {
  fd_closer f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) throw std::runtime_error("open " + path + ": " + std::strerror(errno));
  usage u;
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) throw std::runtime_error("fstat " + path);
  u.apparent = static_cast<std::uint64_t>(st.st_size);
  u.allocated = static_cast<std::uint64_t>(st.st_blocks) * 512;
  constexpr unsigned kMax = 256;
  std::vector<std::uint64_t> buf((sizeof(fiemap) + kMax * sizeof(fiemap_extent)) / 8 + 1);
  std::uint64_t start = 0;
  for (;;) {
    std::fill(buf.begin(), buf.end(), 0);
    auto* fm = reinterpret_cast<fiemap*>(buf.data());
    fm->fm_start = start;
    fm->fm_length = FIEMAP_MAX_OFFSET - start;
    fm->fm_flags = FIEMAP_FLAG_SYNC;
    fm->fm_extent_count = kMax;
    if (::ioctl(f.fd, FS_IOC_FIEMAP, fm) != 0) {
      if (errno == EOPNOTSUPP && start == 0) return u;  // tmpfs: no extent map (nothing shared)
      throw std::runtime_error("FIEMAP " + path + ": " + std::strerror(errno));
    }
    if (fm->fm_mapped_extents == 0) break;
    bool last = false;
    for (unsigned i = 0; i < fm->fm_mapped_extents; ++i) {
      const fiemap_extent& e = fm->fm_extents[i];
      u.extent_bytes += e.fe_length;
      if (e.fe_flags & FIEMAP_EXTENT_SHARED) u.shared_bytes += e.fe_length;
      start = e.fe_logical + e.fe_length;
      last = last || (e.fe_flags & FIEMAP_EXTENT_LAST);
    }
    if (last) break;
  }
  return u;
}

std::vector<std::string> segment_files(const std::string& ds) {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(ds)) {
    if (e.path().filename().string().rfind("segment", 0) == 0) v.push_back(e.path().filename());
  }
  std::sort(v.begin(), v.end());
  return v;
}

usage datastore_usage(const std::string& ds) {
  usage u;
  for (const auto& s : segment_files(ds)) u += file_usage(ds + "/" + s);
  return u;
}

// The [data, hole) ranges of a file (SEEK_DATA / SEEK_HOLE).
std::vector<std::pair<std::uint64_t, std::uint64_t>> data_ranges(const std::string& path) {
  fd_closer f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) throw std::runtime_error("open " + path);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> v;
  off_t pos = 0;
  for (;;) {
    const off_t d = ::lseek(f.fd, pos, SEEK_DATA);
    if (d < 0) break;  // ENXIO: no more data
    const off_t h = ::lseek(f.fd, d, SEEK_HOLE);
    if (h < 0) throw std::runtime_error("SEEK_HOLE " + path);
    v.emplace_back(d, h);
    pos = h;
  }
  return v;
}

// Empty when every data range of the snapshot's segments lies inside a data range of the
// source's segment of the same name (holes preserved; the copy invents no data). Only the page
// area [0, segment_size) is compared: the store keeps its own header/trailer after it, which a
// snapshot rewrites (new uuid).
std::string holes_preserved(const std::string& src, const std::string& snap, std::uint64_t segment_size) {
  for (const auto& s : segment_files(snap)) {
    const auto a = data_ranges(src + "/" + s), b = data_ranges(snap + "/" + s);
    for (auto [lo, hi] : b) {
      if (lo >= segment_size) continue;
      hi = std::min(hi, segment_size);
      const bool inside = std::any_of(a.begin(), a.end(), [&](const auto& r) { return r.first <= lo && hi <= r.second; });
      if (!inside) {
        return s + ": snapshot data [" + std::to_string(lo) + ", " + std::to_string(hi) + ") is a hole in the source";
      }
    }
  }
  return {};
}

// ---- the sparse block -----------------------------------------------------------------------

constexpr std::uint64_t kSparseBytes = 8ull << 20;
constexpr std::uint64_t kPage = 64 << 10;

// Raw 8 MiB allocation (fresh chunks, never touched) of which every 4th page is written;
// its offset is kept in the named object "sparse-ptr".
void make_sparse(manager& m) {
  auto* p = static_cast<unsigned char*>(m.allocate_aligned(kSparseBytes, 4096));
  ASSERT_NE(p, nullptr);
  const std::uint64_t off = static_cast<std::uint64_t>(p - static_cast<unsigned char*>(m.get_address()));
  ASSERT_EQ(off % kPage, 0u) << "sparse block not page aligned";
  for (std::uint64_t pg = 0; pg < kSparseBytes / kPage; pg += 4) fill_pattern(p + pg * kPage, kPage, 5, pg, 1);
  ASSERT_NE(m.construct<u64>("sparse-ptr")[2](off), nullptr);
  m.find<u64>("sparse-ptr").first[1] = kSparseBytes;
}

std::string check_sparse(const manager& m) {
  auto [q, n] = m.find<u64>("sparse-ptr");
  if (q == nullptr || n != 2 || q[1] != kSparseBytes) return "sparse-ptr missing";
  const auto* p = static_cast<const unsigned char*>(m.get_address()) + q[0];
  std::vector<std::uint8_t> want(kPage);
  for (std::uint64_t pg = 0; pg < kSparseBytes / kPage; ++pg) {
    if (pg % 4 == 0) {
      fill_pattern(want.data(), kPage, 5, pg, 1);
      if (std::memcmp(p + pg * kPage, want.data(), kPage) != 0) return "sparse page " + std::to_string(pg) + " wrong";
    } else {
      for (std::uint64_t i = 0; i < kPage; ++i) {
        if (p[pg * kPage + i] != 0) return "sparse page " + std::to_string(pg) + " not zero";
      }
    }
  }
  return {};
}

// ---- the campaign ---------------------------------------------------------------------------

options fs_options() {
  options o;
  o.capacity = 512ull << 20;
  o.page_size = kPage;
  o.segment_size = 8ull << 20;
  o.pager.buffer_size = 64ull << 20;
  return o;
}

workload_config fs_config() {
  workload_config c;
  c.writers = 3;
  c.keep = 8;
  c.cells = 1024;
  c.base_arrays = 6;
  c.base_bytes = 4ull << 20;  // 24 MiB of real data
  c.flush_every = 151;
  return c;
}

struct snap_info {
  std::string path;
  std::uint64_t returned = 0, bound = 0;
  usage u;  // measured right after snapshot() returned
};

// Opens a snapshot read-only and checks it against its window; "" when exact.
std::string verify_snapshot(workload& w, const snap_info& s, const std::vector<u64>& base_version, bool* lost) {
  manager m(open_read_only, s.path);
  const std::uint64_t e = m.epoch();
  if (e < s.returned) {
    *lost = true;
    return s.path + " holds epoch " + std::to_string(e) + " < " + std::to_string(s.returned) + " returned by snapshot()";
  }
  if (e > s.bound) return s.path + " holds epoch " + std::to_string(e) + " newer than the source had";
  const auto win = w.window_of(e);
  if (!win) return s.path + ": no recorded flush produced epoch " + std::to_string(e);
  if (auto d = verify_state(m, w.config(), *win, base_version, {}, lost); !d.empty()) {
    return s.path + " (epoch " + std::to_string(e) + "): " + d;
  }
  if (auto d = check_sparse(m); !d.empty()) return s.path + ": " + d;
  if (auto p = m.check(); !p.empty()) return s.path + ": check(): " + p.front();
  return {};
}

void run_campaign(fs_kind kind) {
  scenario_timer timer;
  const int n_snaps = long_mode() ? 40 : 8;
  loop_image img;
  // ext4 snapshots are full (sparse) copies of ~30 MiB each.
  if (auto why = img.setup(kind, kind == fs_kind::ext4 ? (n_snaps + 8ull) * (40ull << 20) : 0); !why.empty()) {
    PHEAP_REQUIRE_FEATURE(std::string("loop-mounted ") + name_of(kind) + " image: " + why);
  }
  const bool reflink = kind != fs_kind::ext4;
  const std::string src = img.mnt() + "/src";
  const workload_config c = fs_config();
  std::vector<snap_info> snaps;
  std::uint64_t failures = 0, lost_n = 0;
  std::vector<u64> final_steps(c.writers);
  std::vector<u64> src_base;
  try {
    manager m(create_only, src, fs_options());
    workload w(m, c);
    make_sparse(m);
    if (::testing::Test::HasFatalFailure()) return;
    w.file_quiescent(w.recorded_flush());

    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < c.writers; ++t) threads.emplace_back([&, t] { w.run_writer(t, stop); });
    threads.emplace_back([&] {
      try {
        while (!stop.load()) {
          w.recorded_flush();
          std::this_thread::sleep_for(std::chrono::milliseconds(15));
        }
      } catch (const std::exception& e) {
        w.fail(std::string("flusher: ") + e.what());
      }
    });
    struct joiner {  // writers stop and are joined in every path
      std::atomic<bool>& stop;
      std::vector<std::thread>& threads;
      ~joiner() {
        stop = true;
        for (auto& t : threads) if (t.joinable()) t.join();
      }
    } join{stop, threads};
    for (int i = 0; i < n_snaps; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(40));
      snap_info s;
      s.path = img.mnt() + "/snap-" + std::to_string(i);
      // The writers go on; the source's flushes wait until the snapshot is measured, since a
      // flush in between rewrites source blocks and unshares them (a CI run measured 89.6 %).
      const auto no_flush = w.hold_flushes();
      s.returned = w.recorded_snapshot(s.path);
      s.bound = m.epoch();
      s.u = datastore_usage(s.path);
      snaps.push_back(s);
    }
    stop = true;
    for (auto& t : threads) t.join();
    for (const auto& e : w.errors()) ADD_FAILURE() << e;
    for (unsigned t = 0; t < c.writers; ++t) {
      final_steps[t] = w.steps(t);
      EXPECT_GT(final_steps[t], c.keep) << "writer " << t << " made no progress";
    }

    // A quiesced snapshot: space accounting and hole maps against a source that stands still.
    w.file_quiescent(w.recorded_flush());
    snap_info fin;
    fin.path = img.mnt() + "/snap-final";
    const usage src_u = datastore_usage(src);
    const std::uint64_t used_before = img.used_bytes();
    fin.returned = w.recorded_snapshot(fin.path);
    const std::uint64_t used_after = img.used_bytes();
    fin.bound = m.epoch();
    fin.u = datastore_usage(fin.path);
    const std::int64_t grew = static_cast<std::int64_t>(used_after) - static_cast<std::int64_t>(used_before);
    std::printf("%s: source segments %.1f MiB allocated of %.1f MiB apparent; quiesced snapshot: %.1f MiB "
                "allocated, %.1f%% of extents shared, file system grew by %.2f MiB\n",
                name_of(kind), src_u.allocated / 1048576.0, src_u.apparent / 1048576.0, fin.u.allocated / 1048576.0,
                100 * fin.u.shared_fraction(), grew / 1048576.0);
    EXPECT_GT(src_u.allocated, 24ull << 20) << "the source holds less than its base data";
    EXPECT_EQ(holes_preserved(src, fin.path, fs_options().segment_size), "");
    EXPECT_LT(fin.u.allocated, fin.u.apparent * 3 / 4) << "holes were filled in";
    if (reflink) {
      EXPECT_GE(fin.u.shared_fraction(), 0.9) << "quiesced snapshot: reflink not taken";
      if (kind == fs_kind::xfs) {  // Btrfs' statfs counts chunk allocations: not exact enough
        EXPECT_LT(grew, static_cast<std::int64_t>(src_u.allocated / 10 + (2 << 20)))
            << "a reflinked snapshot must not copy the data";
      }
    } else {
      EXPECT_EQ(fin.u.shared_bytes, 0u) << "ext4 cannot share extents";
      // Every page with data in the snapshot's map is allocated in its segments. (Not a share of
      // the source's allocation: the source also holds second homes no map names any more,
      // which the copy leaves out.)
      std::uint64_t snap_live = 0;
      {
        store_options so;
        so.read_only = true;
        snap_live = sparse_store::open(fin.path, so)->stats().live_bytes;
      }
      EXPECT_GT(snap_live, 24ull << 20) << "the snapshot holds less than the base data";
      EXPECT_GE(fin.u.allocated, snap_live) << "sparse copy lost data";
      EXPECT_LE(fin.u.allocated, src_u.allocated * 11 / 10 + (1 << 20)) << "sparse copy is not sparse";
      // Loose: the flush inside snapshot() also frees space in the source (discarded pages are
      // punched), and the copy leaves out the homes no map names, which offsets its growth
      // (measured 26.7 MiB for a 30.3 MiB copy). The copy's own allocation is checked above.
      EXPECT_GE(grew, static_cast<std::int64_t>(src_u.allocated / 2)) << "the copy did not allocate its data";
    }
    for (const auto& s : snaps) {
      std::printf("%s: %s epoch>=%llu: %.1f MiB allocated of %.1f MiB apparent, %.1f%% of extents shared\n",
                  name_of(kind), fs::path(s.path).filename().c_str(), static_cast<unsigned long long>(s.returned),
                  s.u.allocated / 1048576.0, s.u.apparent / 1048576.0, 100 * s.u.shared_fraction());
      if (reflink) {
        EXPECT_GE(s.u.shared_fraction(), 0.9) << s.path << ": reflink not taken";
      } else {
        EXPECT_EQ(s.u.shared_bytes, 0u) << s.path;
        EXPECT_LT(s.u.allocated, s.u.apparent * 3 / 4) << s.path << ": holes were filled in";
      }
    }
    snaps.push_back(fin);

    if (kind == fs_kind::xfs) {
      // Across file systems FICLONE fails with EXDEV: manager::copy of the quiesced snapshot
      // to tmpfs must fall back to a sparse copy with the same content.
      scratch_dir other;
      snap_info cp = fin;
      cp.path = other / "copy";
      manager::copy(fin.path, cp.path);
      const usage cu = datastore_usage(cp.path);
      EXPECT_EQ(cu.shared_bytes, 0u);
      EXPECT_EQ(holes_preserved(fin.path, cp.path, fs_options().segment_size), "");
      EXPECT_LT(cu.allocated, cu.apparent * 3 / 4) << "cross-file-system copy is not sparse";
      EXPECT_GE(cu.allocated, fin.u.allocated * 9 / 10) << "cross-file-system copy lost data";
      bool lost = false;
      std::string err;
      try {
        err = verify_snapshot(w, cp, w.base_version(), &lost);
      } catch (const std::exception& e) {
        err = e.what();
      }
      EXPECT_EQ(err, "") << "cross-file-system copy";
    }

    // The source moves on: base/0 overwritten and flushed, so its segments get new page copies
    // in extents every snapshot may share. Every snapshot must still hold its own watermark.
    const auto base_at_snapshots = w.base_version();
    w.rewrite_base(0, 2);
    w.file_quiescent(w.recorded_flush());
    src_base = w.base_version();
    for (const auto& s : snaps) {
      bool lost = false;
      std::string err;
      try {
        err = verify_snapshot(w, s, base_at_snapshots, &lost);
      } catch (const std::exception& e) {
        err = s.path + ": " + e.what();
      }
      EXPECT_EQ(err, "");
      failures += err.empty() ? 0 : 1;
      lost_n += lost ? 1 : 0;
    }

    // Writing into a snapshot leaves the source alone (on reflink file systems this is the
    // copy-on-write of shared extents): snapshot 0 loses writer 0, gets base/1 version 3.
    const snap_info& s0 = snaps.front();
    window win0;
    {
      manager s(open_only, s0.path);
      win0 = *w.window_of(s.epoch());
      for (u64 st = 1; st <= win0.hi[0] + 2; ++st) s.destroy<record>(record_name(0, st));
      EXPECT_TRUE(s.destroy<u64>(cells_name(0)));
      write_base(s, c, 1, 3);
      ASSERT_NE(s.construct<u64>("snapshot-mark")[2](1), nullptr);
      s.flush();
      EXPECT_TRUE(s.check().empty());
    }
    {
      manager s(open_read_only, s0.path);
      auto v = base_at_snapshots;
      v[1] = 3;
      EXPECT_EQ(verify_state(s, c, win0, v, {true}), "") << "the modified snapshot";
      EXPECT_NE(s.find<u64>("snapshot-mark").first, nullptr);
      EXPECT_NE(s.get_uuid(), m.get_uuid());
    }
    EXPECT_EQ(m.find<u64>("snapshot-mark").first, nullptr) << "a write to the snapshot reached the source";
  } catch (const std::exception& e) {
    ADD_FAILURE() << name_of(kind) << ": " << e.what();
  }
  if (!final_steps.empty() && !src_base.empty()) {
    try {
      manager m(open_read_only, src);
      window fin{final_steps, final_steps};
      EXPECT_EQ(verify_state(m, c, fin, src_base), "") << "the source after its close";
      EXPECT_EQ(check_sparse(m), "");
      EXPECT_TRUE(m.check().empty());
    } catch (const std::exception& e) {
      ADD_FAILURE() << "source: " << e.what();
    }
  }
  if (::testing::Test::HasFailure() && failures == 0) failures = 1;
  print_result(std::string(reflink ? "snapshot_reflink_" : "snapshot_sparse_") + name_of(kind), snaps.size(),
               failures, lost_n, timer.seconds());
}

TEST(SnapshotFs, XfsSnapshotsAreReflinksHoldOneWatermarkAndAreIndependent) { run_campaign(fs_kind::xfs); }
TEST(SnapshotFs, BtrfsSnapshotsAreReflinksHoldOneWatermarkAndAreIndependent) { run_campaign(fs_kind::btrfs); }
TEST(SnapshotFs, Ext4SnapshotsAreSparseCopiesHoldOneWatermarkAndAreIndependent) { run_campaign(fs_kind::ext4); }

// ---- SIGKILL in the middle of snapshots (XFS) -----------------------------------------------

constexpr u64 kChildThread = 100;  // records of the crash child: record_name(100, n)

workload_config crash_config() {
  workload_config c;
  c.writers = 0;
  c.base_arrays = 2;
  c.base_bytes = 4ull << 20;
  c.max_values = 400;
  return c;
}

options crash_options() {
  options o = fs_options();
  o.pager.buffer_size = 32ull << 20;
  o.engine = io::make_posix_engine();  // a fork()ed child must not share the parent's io_uring
  return o;
}

// The child: reopen the source, then forever: one record, flush, snapshot. Reports on `fd`:
//   F <records> <epoch>     flush acknowledged
//   B <name>                snapshot begins
//   S <name> <epoch>        snapshot acknowledged
[[noreturn]] void crash_child(const std::string& src, const std::string& dir, int iter, int fd) {
  auto say = [fd](const char* fmt, auto... a) {
    char buf[512];
    const int n = std::snprintf(buf, sizeof buf, fmt, a...);
    if (::write(fd, buf, static_cast<std::size_t>(n)) != n) ::_exit(4);
  };
  try {
    manager m(open_only, src, crash_options());
    u64 n = 0;
    while (m.find<record>(record_name(kChildThread, n + 1)).first != nullptr) ++n;
    const auto alloc = m.get_allocator<std::byte>();
    for (int j = 0;; ++j) {
      ++n;
      m.construct<record>(record_name(kChildThread, n))(alloc, kChildThread, n, crash_config().max_values);
      const u64 e = m.flush();
      say("F %llu %llu\n", static_cast<unsigned long long>(n), static_cast<unsigned long long>(e));
      const std::string name = "k" + std::to_string(iter) + "-" + std::to_string(j);
      say("B %s\n", name.c_str());
      const u64 se = m.snapshot(dir + "/" + name);
      say("S %s %llu\n", name.c_str(), static_cast<unsigned long long>(se));
    }
  } catch (const std::exception& e) {
    say("E %s\n", e.what());
    ::_exit(3);
  }
}

// Exactly records 1..n of the child, the base arrays, nothing else.
std::string check_child_state(const manager& m, u64 n) {
  const auto c = crash_config();
  std::vector<u64> v(c.base_arrays, 1);
  for (u64 i = 0; i < c.base_arrays; ++i) {
    auto [p, len] = m.find<u64>(base_name(i));
    if (p == nullptr || len != c.base_bytes / 8) return base_name(i) + " missing";
    for (u64 j = 0; j < len; j += 97) {
      if (p[j] != base_value(i, j, 1)) return base_name(i) + " wrong";
    }
  }
  for (u64 s = 1; s <= n; ++s) {
    auto [r, len] = m.find<record>(record_name(kChildThread, s));
    if (r == nullptr) return "record " + std::to_string(s) + " of " + std::to_string(n) + " missing";
    if (auto d = r->diff(kChildThread, s, c.max_values); !d.empty()) return d;
  }
  if (m.get_num_named_objects() != n + c.base_arrays) {
    return std::to_string(m.get_num_named_objects()) + " named objects, expected " + std::to_string(n + c.base_arrays);
  }
  if (auto p = m.check(); !p.empty()) return "check(): " + p.front();
  return {};
}

TEST(SnapshotFs, XfsSigkillDuringSnapshotsLeavesEachDestinationAbsentOrComplete) {
  scenario_timer timer;
  loop_image img;
  if (auto why = img.setup(fs_kind::xfs, 0); !why.empty()) {
    PHEAP_REQUIRE_FEATURE(std::string("loop-mounted xfs image: ") + why);
  }
  const std::string src = img.mnt() + "/src";
  const std::string dir = img.mnt() + "/snaps";
  fs::create_directory(dir);
  {
    options o = crash_options();
    manager m(create_only, src, o);
    for (u64 i = 0; i < crash_config().base_arrays; ++i) write_base(m, crash_config(), i, 1);
  }
  const int iterations = long_mode() ? 100 : 12;
  std::mt19937_64 rng(0x5AB);
  std::uint64_t failures = 0, lost_n = 0, mid = 0, leftovers = 0;
  std::uint64_t acked_n = 0, acked_e = 0;  // last acknowledged flush over all children
  double snap_us = 2000;                    // running estimate of one snapshot's duration
  for (int it = 0; it < iterations; ++it) {
    int p[2];
    ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
    const int want_b = 1 + static_cast<int>(rng() % 3);
    const auto delay = std::chrono::microseconds(static_cast<long>(rng() % static_cast<u64>(snap_us * 1.3 + 1)));
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(p[0]);
      crash_child(src, dir, it, p[1]);
    }
    ::close(p[1]);
    struct reaper {  // the child never outlives an iteration, whatever fails (mount stays free)
      pid_t pid;
      bool reaped = false;
      ~reaper() {
        if (reaped) return;
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
    } reap{pid};
    // Read lines until the want_b-th "B", then kill after `delay`.
    std::string text, pending;
    int bs = 0;
    bool killed = false;
    std::chrono::steady_clock::time_point last_b;
    std::vector<double> durations;
    auto consume = [&](bool may_kill) {
      for (;;) {
        const auto nl = pending.find('\n');
        if (nl == std::string::npos) return;
        const std::string line = pending.substr(0, nl);
        pending.erase(0, nl + 1);
        text += line + "\n";
        const auto now = std::chrono::steady_clock::now();
        if (line.rfind("B ", 0) == 0) {
          last_b = now;
          if (may_kill && ++bs == want_b) {
            std::this_thread::sleep_for(delay);
            ::kill(pid, SIGKILL);
            killed = true;
          }
        } else if (line.rfind("S ", 0) == 0 && may_kill) {
          durations.push_back(std::chrono::duration<double, std::micro>(now - last_b).count());
        }
      }
    };
    char buf[4096];
    while (!killed) {
      pollfd pf{p[0], POLLIN, 0};
      if (::poll(&pf, 1, 60000) <= 0) {
        ::kill(pid, SIGKILL);
        ADD_FAILURE() << "child silent for 60 s";
        break;
      }
      const ssize_t n = ::read(p[0], buf, sizeof buf);
      if (n <= 0) break;
      pending.append(buf, static_cast<std::size_t>(n));
      consume(true);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    reap.reaped = true;
    for (ssize_t n; (n = ::read(p[0], buf, sizeof buf)) > 0;) pending.append(buf, static_cast<std::size_t>(n));
    ::close(p[0]);
    consume(false);
    if (!durations.empty()) snap_us = 0.7 * snap_us + 0.3 * durations.back();
    if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)) {
      ADD_FAILURE() << "child did not die by SIGKILL: status " << status << "\n" << text;
      ++failures;
      continue;
    }
    // Parse the acknowledgements.
    std::map<u64, u64> records_at;  // epoch -> records
    // name, acknowledged, epoch of the flush before it: snapshot() flushes once more (with
    // nothing new: the child is single-threaded), so the snapshot must hold that epoch + 1
    // with the records of that flush.
    std::vector<std::tuple<std::string, bool, u64>> snaps;
    u64 last_e = 0;
    for (const auto& line : lines_with(text, "")) {
      char name[256];
      unsigned long long a = 0, b = 0;
      if (std::sscanf(line.c_str(), "F %llu %llu", &a, &b) == 2) {
        records_at[b] = a;
        last_e = b;
        acked_n = a;
        acked_e = b;
      } else if (std::sscanf(line.c_str(), "B %255s", name) == 1) {
        snaps.emplace_back(name, false, last_e);
      } else if (std::sscanf(line.c_str(), "S %255s %llu", name, &a) == 2) {
        ASSERT_FALSE(snaps.empty());
        std::get<1>(snaps.back()) = true;
        EXPECT_EQ(a, std::get<2>(snaps.back()) + 1) << "snapshot() returns the epoch of its own flush";
      } else {
        ADD_FAILURE() << "child: " << line;
      }
    }
    bool bad = false, lost = false;
    for (const auto& [name, acked, e] : snaps) {
      const std::string dst = dir + "/" + name;
      if (!acked) ++mid;
      if (!fs::exists(dst)) {
        if (acked) {
          ADD_FAILURE() << "acknowledged snapshot " << name << " is missing";
          bad = lost = true;
        }
        continue;
      }
      try {
        manager s(open_read_only, dst);
        std::string d = s.epoch() == e + 1 ? check_child_state(s, records_at[e])
                                           : "epoch " + std::to_string(s.epoch()) + ", expected " + std::to_string(e + 1);
        EXPECT_EQ(d, "") << name << (acked ? " (acknowledged)" : " (killed during it)");
        if (!d.empty()) bad = true, lost = lost || acked;
      } catch (const std::exception& ex) {
        ADD_FAILURE() << name << (acked ? " (acknowledged)" : " (killed during it)")
                      << " exists but does not open: " << ex.what();
        bad = true;
        lost = lost || acked;
      }
    }
    // The source: at the last acknowledged flush or the one after; a retried snapshot of an
    // interrupted name succeeds and removes the temporary the crash left.
    try {
      manager m(open_only, src, crash_options());
      u64 n = 0;
      while (m.find<record>(record_name(kChildThread, n + 1)).first != nullptr) ++n;
      if (n < acked_n || m.epoch() < acked_e) {
        ADD_FAILURE() << "source lost acknowledged records: " << n << " < " << acked_n;
        bad = lost = true;
      }
      const auto d = check_child_state(m, n);
      EXPECT_EQ(d, "") << "source";
      bad = bad || !d.empty();
      acked_n = n;
      for (const auto& [name, acked, e] : snaps) {
        if (acked) continue;
        std::vector<std::string> tmp;
        for (const auto& de : fs::directory_iterator(dir)) {
          if (de.path().filename().string().rfind("." + name + ".creating-", 0) == 0) tmp.push_back(de.path());
        }
        leftovers += tmp.size();
        if (fs::exists(dir + "/" + name)) continue;
        m.snapshot(dir + "/" + name);
        for (const auto& t : tmp) {
          EXPECT_FALSE(fs::exists(t)) << "the retried snapshot left the crash's temporary " << t;
        }
        manager s(open_read_only, dir + "/" + name);
        EXPECT_EQ(check_child_state(s, n), "") << "retried " << name;
      }
    } catch (const std::exception& ex) {
      ADD_FAILURE() << "source after kill " << it << ": " << ex.what();
      bad = true;
    }
    failures += bad ? 1 : 0;
    lost_n += lost ? 1 : 0;
  }
  std::printf("kills: %d, %llu landed inside snapshot(), %llu temporaries left by kills; snapshot ~%.0f us\n",
              iterations, static_cast<unsigned long long>(mid), static_cast<unsigned long long>(leftovers), snap_us);
  print_result("snapshot_kill9_xfs", iterations, failures, lost_n, timer.seconds());
}

}  // namespace
}  // namespace pheap::test
