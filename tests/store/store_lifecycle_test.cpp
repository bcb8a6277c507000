// The store operations the heap's lifecycle and its kernel-mmap backend use instead of knowing
// file names, offsets or the lock protocol: remove() of a whole datastore, and direct mapping
// (the committed state at fixed file offsets, described as extents of open files).
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "store_test_util.hpp"
#include "support/fault_engine.hpp"

namespace pheap::test {
namespace {

namespace fs = std::filesystem;

class StoreLifecycle : public store_test {
 protected:
  store_options small() const { return opts(64 * 4096, 4096, 16 * 4096); }
};
PHEAP_STORE_SUITE(StoreLifecycle);

template <class Fn>
errc code_of(Fn&& fn) {
  try {
    fn();
  } catch (const error& e) {
    return e.code();
  }
  ADD_FAILURE() << "no error";
  return errc::io;
}

// A closed datastore with data in two segments (and whatever else the format keeps), plus an
// unknown file and a sub-directory holding a file: remove() takes all of it.
std::string make_datastore(const store_options& create_opts, const std::string& path) {
  auto s = sparse_store::create(path, create_opts);
  for (std::uint64_t p : {1, 17, 40}) write_one(*s, p, 3, 1);
  s->commit(bytes_of("one"));
  write_one(*s, 2, 3, 2);
  s->commit(bytes_of("two"));
  s.reset();
  std::ofstream(path + "/notes.txt") << "unknown file";
  fs::create_directory(path + "/sub");
  std::ofstream(path + "/sub/inner") << "x";
  return path;
}

// A read-only open that maps the files itself excludes writers (store_options::beside_writer
// false): a reader registered beside a writer gets no extents (store_readers_test).
store_options mapping(store_options o) {
  o.beside_writer = false;
  return o;
}

TEST_P(StoreLifecycle, RemoveDeletesTheWholeDatastoreThroughTheEngine) {
  temp_dir dir;
  const std::string path = make_datastore(small(), dir / "ds");
  auto f = make_fault_engine(engine());
  store_options o;
  o.engine = f;
  sparse_store::remove(path, o);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_GE(f->operations(op_kind::metadata), 5u) << "every removal goes through io::engine";
  EXPECT_EQ(code_of([&] { sparse_store::remove(path, open_opts()); }), errc::not_found);
}

TEST_P(StoreLifecycle, RemoveOfAnOpenDatastoreIsLockedAndDeletesNothing) {
  temp_dir dir;
  const std::string path = make_datastore(small(), dir / "ds");
  for (const bool read_only : {false, true}) {
    auto s = sparse_store::open(path, open_opts(read_only));
    try {
      sparse_store::remove(path, open_opts());
      ADD_FAILURE() << "remove of an open datastore succeeded";
    } catch (const error& e) {
      EXPECT_EQ(e.code(), errc::locked) << e.what();
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("remove"), std::string::npos) << e.what();
    }
  }
  auto s = sparse_store::open(path, open_opts(true));
  EXPECT_EQ(s->epoch(), 2u);
  EXPECT_EQ(read_one(*s, 17), pattern(4096, 3, 17, 1));
  EXPECT_EQ(read_one(*s, 2), pattern(4096, 3, 2, 2));
}

TEST_P(StoreLifecycle, RemoveOfADirectoryThatIsNoDatastoreIsRefusedAndDeletesNothing) {
  temp_dir dir;
  const std::string plain = dir / "plain";
  fs::create_directory(plain);
  std::ofstream(plain + "/precious") << "keep me";
  try {
    sparse_store::remove(plain, open_opts());
    ADD_FAILURE() << "remove of a non-datastore succeeded";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::not_a_datastore) << e.what();
    EXPECT_NE(std::string(e.what()).find(plain), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::exists(plain + "/precious"));
}

TEST_P(StoreLifecycle, RemoveCutShortByAnIoErrorIsFinishedByTheNextRemove) {
  temp_dir dir;
  std::uint64_t ops;
  {
    temp_dir probe_dir;
    const std::string probe = make_datastore(small(), probe_dir / "ds");
    auto f = make_fault_engine(engine());
    store_options o;
    o.engine = f;
    sparse_store::remove(probe, o);
    ops = f->operations(op_kind::metadata);
  }
  for (std::uint64_t n = 1; n <= ops; ++n) {
    SCOPED_TRACE("EIO at metadata operation " + std::to_string(n));
    const std::string p = make_datastore(small(), dir / ("ds" + std::to_string(n)));
    auto f = make_fault_engine(engine());
    f->add_rule({op_kind::metadata, n, fault_action::fail_eio, false});
    store_options o;
    o.engine = f;
    EXPECT_EQ(code_of([&] { sparse_store::remove(p, o); }), errc::io);
    if (fs::exists(p + "/pheap.super")) {
      // Cut short before the superblock went: still a datastore, so a remove finishes it.
      sparse_store::remove(p, open_opts());
    } else if (fs::exists(p)) {
      // Only the final rmdir failed: what is left is an empty directory, no datastore.
      EXPECT_TRUE(fs::is_empty(p));
      fs::remove(p);
    }
    EXPECT_FALSE(fs::exists(p));
  }
}

// Reads the region byte range of `page` through the extents (as a mapping would see it).
std::vector<std::uint8_t> page_via_extents(const std::vector<direct_extent>& xs, std::uint64_t page,
                                           std::uint32_t ps) {
  std::vector<std::uint8_t> out(ps, 0);
  const std::uint64_t at = page * ps;
  for (const auto& x : xs) {
    if (at < x.region_offset || at >= x.region_offset + x.length) continue;
    if (x.file) {
      EXPECT_EQ(::pread(x.file->fd(), out.data(), ps,
                        static_cast<off_t>(x.file_offset + (at - x.region_offset))),
                static_cast<ssize_t>(ps));
    }
    return out;
  }
  ADD_FAILURE() << "page " << page << " is in no extent";
  return out;
}

void expect_cover(const std::vector<direct_extent>& xs, std::uint64_t capacity, bool files) {
  std::uint64_t next = 0;
  for (const auto& x : xs) {
    EXPECT_EQ(x.region_offset, next) << "extents are in region order, without gaps";
    EXPECT_GT(x.length, 0u);
    EXPECT_EQ(x.file_offset % 4096, 0u) << "mappable offsets";
    if (files) {
      EXPECT_TRUE(x.file) << "extent at " << x.region_offset << " has no file";
    }
    next = x.region_offset + x.length;
  }
  EXPECT_EQ(next, capacity) << "extents cover the capacity";
}

TEST_P(StoreLifecycle, PreparedDirectMappingCommitsAndItsExtentsCoverTheCapacityWithTheData) {
  temp_dir dir;
  const std::string path = dir / "ds";
  const std::uint64_t cap = 64 * 4096;
  {
    auto s = sparse_store::create(path, small());
    for (std::uint64_t p : {1, 17, 40}) write_one(*s, p, 3, 1);
    s->commit({});
    write_one(*s, 17, 3, 2);  // rewritten in a later epoch
    write_one(*s, 63, 3, 2);  // uncommitted: prepare commits it
    EXPECT_EQ(s->prepare_direct_mapping(bytes_of("mapped")), 3u) << "two commits";
    EXPECT_TRUE(s->direct_mapping_possible());
    EXPECT_EQ(s->root(), bytes_of("mapped"));
    const auto xs = s->direct_extents();
    expect_cover(xs, cap, true);
    for (const auto& x : xs) {
      EXPECT_NE(::fcntl(x.file->fd(), F_GETFL) & O_ACCMODE, O_RDONLY) << "writable files";
    }
    EXPECT_EQ(page_via_extents(xs, 1, 4096), pattern(4096, 3, 1, 1));
    EXPECT_EQ(page_via_extents(xs, 17, 4096), pattern(4096, 3, 17, 2));
    EXPECT_EQ(page_via_extents(xs, 63, 4096), pattern(4096, 3, 63, 2));
    EXPECT_TRUE(is_zero(page_via_extents(xs, 5, 4096)));
  }
  auto ro = sparse_store::open(path, mapping(open_opts(true)));
  EXPECT_TRUE(ro->direct_mapping_possible()) << "the prepared state needs no read-write open";
  const auto xs = ro->direct_extents();
  expect_cover(xs, cap, true);
  EXPECT_EQ(page_via_extents(xs, 17, 4096), pattern(4096, 3, 17, 2));
}

TEST_P(StoreLifecycle, ReadOnlyDirectMappingIsUnavailableWhileTheLastCommitIsNotLaidOut) {
  temp_dir dir;
  const std::string path = dir / "ds";
  {
    auto s = sparse_store::create(path, small());
    s->commit({});
  }
  {
    auto ro = sparse_store::open(path, mapping(open_opts(true)));
    ASSERT_TRUE(ro->direct_mapping_possible()) << "nothing written: all zeros";
    const auto xs = ro->direct_extents();
    expect_cover(xs, 64 * 4096, false);
    for (const auto& x : xs) EXPECT_FALSE(x.file) << "no file exists yet: zeros";
    EXPECT_EQ(code_of([&] { ro->prepare_direct_mapping({}); }), errc::read_only);
  }
  {
    auto s = sparse_store::open(path, open_opts());
    write_one(*s, 3, 5, 1);
    s->prepare_direct_mapping({});
    write_one(*s, 3, 5, 2);  // a page the mapped state holds, rewritten through the store
    s->commit({});
  }
  auto ro = sparse_store::open(path, mapping(open_opts(true)));
  EXPECT_FALSE(ro->direct_mapping_possible());
  try {
    ro->direct_extents();
    ADD_FAILURE() << "extents of a state that is not laid out";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::unavailable) << e.what();
    EXPECT_NE(std::string(e.what()).find("read-write"), std::string::npos)
        << "says what to do: " << e.what();
  }
  EXPECT_EQ(read_one(*ro, 3), pattern(4096, 5, 3, 2)) << "the store itself reads it";
}

TEST_P(StoreLifecycle, FinishDirectMappingAdoptsWhatWasWrittenThroughTheFiles) {
  temp_dir dir;
  const std::string path = dir / "ds";
  {
    auto s = sparse_store::create(path, small());
    for (std::uint64_t p : {1, 17, 40}) write_one(*s, p, 3, 1);
    s->prepare_direct_mapping(bytes_of("open"));
    const auto xs = s->direct_extents();
    auto write_through = [&](std::uint64_t page, const std::vector<std::uint8_t>& img) {
      for (const auto& x : xs) {
        const std::uint64_t at = page * 4096;
        if (at < x.region_offset || at >= x.region_offset + x.length) continue;
        ASSERT_EQ(::pwrite(x.file->fd(), img.data(), img.size(),
                           static_cast<off_t>(x.file_offset + at - x.region_offset)),
                  4096);
      }
    };
    write_through(17, pattern(4096, 9, 17, 9));  // changed
    write_through(50, pattern(4096, 9, 50, 9));  // new
    write_through(40, std::vector<std::uint8_t>(4096, 0));  // zeroed
    const std::uint64_t before = s->epoch();
    EXPECT_EQ(s->finish_direct_mapping(bytes_of("clean")), before + 1);
    EXPECT_EQ(s->root(), bytes_of("clean"));
  }
  {
    auto s = sparse_store::open(path, open_opts());
    EXPECT_EQ(read_one(*s, 1), pattern(4096, 3, 1, 1));
    EXPECT_EQ(read_one(*s, 17), pattern(4096, 9, 17, 9)) << "checksums follow the files";
    EXPECT_EQ(read_one(*s, 50), pattern(4096, 9, 50, 9));
    EXPECT_TRUE(is_zero(read_one(*s, 40)));
  }
  auto ro = sparse_store::open(path, open_opts(true));
  EXPECT_EQ(code_of([&] { ro->finish_direct_mapping({}); }), errc::read_only);
}

}  // namespace
}  // namespace pheap::test
