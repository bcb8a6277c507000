// The store operations the heap's lifecycle and its kernel-mmap backend use instead of knowing
// file names, offsets or the lock protocol: remove() of a whole datastore, and direct mapping
// (the committed state at fixed file offsets, described as extents of open files).
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

}  // namespace
}  // namespace pheap::test
