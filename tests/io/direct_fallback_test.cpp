// open_mode::direct on a file system that refuses O_DIRECT (ramfs: EINVAL at open) falls back
// to buffered I/O that drops its cached pages at every sync, says so once per process on
// stderr, and keeps every engine contract. Needs root (mount -t ramfs): label `root`.
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "common/test_util.hpp"
#include "pheap/error.hpp"
#include "pheap/io.hpp"
#include "pheap/sparse_store.hpp"
#include "support/fault_engine.hpp"

namespace pheap {
namespace {

using io::open_mode;

// A ramfs mounted on a fresh directory, unmounted by the destructor.
class ramfs_mount {
 public:
  std::string setup() {
    if (::geteuid() != 0) return "not root (mount -t ramfs needs CAP_SYS_ADMIN)";
    mnt_ = dir_ / "mnt";
    std::filesystem::create_directory(mnt_);
    if (::mount("pheap-test", mnt_.c_str(), "ramfs", 0, nullptr) != 0) {
      return std::string("mount -t ramfs failed: ") + std::strerror(errno);
    }
    mounted_ = true;
    return {};
  }
  ~ramfs_mount() {
    if (mounted_ && ::umount(mnt_.c_str()) != 0) ::umount2(mnt_.c_str(), MNT_DETACH);
  }
  const std::string& path() const { return mnt_; }

 private:
  test::temp_dir dir_;
  std::string mnt_;
  bool mounted_ = false;
};

// In the child: every engine opens two files direct on the ramfs; each must be buffered, keep
// the contracts, sync; exit status 0 when all held.
int exercise(const std::string& dir) {
  std::vector<std::shared_ptr<io::engine>> engines{io::make_posix_engine()};
  try {
    engines.push_back(io::make_uring_engine());
  } catch (const error&) {
    // io_uring missing: the posix engine alone (the conformance suite requires io_uring in CI)
  }
  engines.push_back(test::make_fault_engine(io::make_posix_engine()));
  int n = 0;
  for (auto& eng : engines) {
    std::vector<std::unique_ptr<io::file>> files;
    std::vector<io::file*> ptrs;
    for (int k = 0; k < 2; ++k) {
      files.push_back(eng->open(dir + "/f" + std::to_string(n++), open_mode::create | open_mode::direct));
      ptrs.push_back(files.back().get());
      if (files.back()->direct()) return 1;
    }
    const auto data = test::pattern(3 * 4096 + 5, 31, static_cast<std::uint64_t>(n), 0);
    for (io::file* f : ptrs) eng->write_at(*f, 4096, data.data(), data.size());
    eng->sync(*ptrs[0]);
    eng->sync_files(ptrs);
    for (io::file* f : ptrs) {
      std::vector<std::uint8_t> got(data.size() + 4096, 0xAA);
      eng->read_at(*f, 4096, got.data(), got.size());
      if (!std::equal(data.begin(), data.end(), got.begin())) return 2;
      if (!std::all_of(got.begin() + static_cast<std::ptrdiff_t>(data.size()), got.end(),
                       [](std::uint8_t b) { return b == 0; })) {
        return 3;
      }
    }
  }
  return 0;
}

TEST(IoDirectFallback, DirectOpenRefusedByTheFileSystemIsBufferedKeepsTheContractAndSaysSoOnce) {
  ramfs_mount fs;
  if (const std::string why = fs.setup(); !why.empty()) PHEAP_REQUIRE_FEATURE(why);
  const auto [status, err] = test::run_in_child_capturing_stderr([&] { return exercise(fs.path()); });
  EXPECT_EQ(status, 0) << "1: direct() true, 2/3: data differs; stderr: " << err;
  std::size_t lines = 0;
  for (std::size_t at = 0; (at = err.find("O_DIRECT refused", at)) != std::string::npos; ++at) ++lines;
  EXPECT_EQ(lines, 1u) << "said once per process: " << err;
  EXPECT_NE(err.find(fs.path() + "/f0"), std::string::npos) << "names the first file: " << err;
  EXPECT_NE(err.find("posix_fadvise(DONTNEED)"), std::string::npos) << err;
}

// The store on such a file system: its segments are direct-mode files, so it runs buffered
// (said once), and a datastore round-trips across a reopen.
TEST(IoDirectFallback, ADatastoreOnAFileSystemWithoutODirectWorksBufferedAndSaysSoOnce) {
  ramfs_mount fs;
  if (const std::string why = fs.setup(); !why.empty()) PHEAP_REQUIRE_FEATURE(why);
  const std::string ds = fs.path() + "/ds";
  const auto [rc, err] = test::run_in_child_capturing_stderr([&] {
    store_options o;
    o.capacity = 64 * 4096;
    o.page_size = 4096;
    o.segment_size = 16 * 4096;
    o.engine = io::make_posix_engine();
    {
      auto s = sparse_store::create(ds, o);
      for (std::uint64_t p = 0; p < 64; p += 5) {
        const auto img = test::pattern(4096, 41, p, 1);
        page_write w{p, img.data()};
        s->write_pages(std::span<const page_write>(&w, 1));
      }
      s->commit({});
    }
    auto s = sparse_store::open(ds, o);
    for (std::uint64_t p = 0; p < 64; ++p) {
      std::vector<std::uint8_t> got(4096, 0xAA);
      page_read r{p, got.data()};
      s->read_pages(std::span<const page_read>(&r, 1));
      const auto want = p % 5 == 0 ? test::pattern(4096, 41, p, 1) : std::vector<std::uint8_t>(4096, 0);
      if (got != want) return 2;
    }
    return 0;
  });
  EXPECT_EQ(rc, 0) << "2: a page differs; stderr: " << err;
  std::size_t lines = 0;
  for (std::size_t at = 0; (at = err.find("O_DIRECT refused", at)) != std::string::npos; ++at) ++lines;
  EXPECT_EQ(lines, 1u) << "said once per process: " << err;
  EXPECT_NE(err.find(ds + "/segment-"), std::string::npos) << "names a segment file: " << err;
}

}  // namespace
}  // namespace pheap
