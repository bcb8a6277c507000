// A manager as one participant of a distributed commit (pheap/two_phase.hpp): only
// prepare + confirm end an epoch, closing commits nothing, and open takes the newest epoch
// the caller accepts — a prepared epoch above it is discarded, one at or below it is kept.
#include "manager_fixture.hpp"
#include "pheap/two_phase.hpp"

namespace pheap::test {
namespace {

class TwoPhaseManager : public manager_test {
 protected:
  static constexpr std::uint64_t any = ~std::uint64_t{0};
  static std::uint64_t value(manager& m, const char* name) {
    auto [p, n] = m.find<std::uint64_t>(name);
    return p ? *p : 0;
  }
};

TEST_F(TwoPhaseManager, FlushThrowsAndCloseCommitsNothing) {
  std::uint64_t e = 0;
  {
    manager m = two_phase::create(path_, small_options());
    *m.construct<std::uint64_t>("x")() = 1;
    try {
      m.flush();
      ADD_FAILURE() << "a participant flushed locally";
    } catch (const error& ex) {
      EXPECT_EQ(ex.code(), errc::invalid_argument) << ex.what();
      EXPECT_NE(std::string(ex.what()).find("collective"), std::string::npos) << ex.what();
    }
    e = two_phase::prepare(m);
    EXPECT_TRUE(two_phase::prepared(m));
    EXPECT_EQ(m.epoch(), e - 1) << "prepared is not yet the watermark";
    EXPECT_EQ(two_phase::confirm(m), e);
    EXPECT_FALSE(two_phase::prepared(m));
    EXPECT_EQ(m.epoch(), e);
    *m.find<std::uint64_t>("x").first = 2;  // never prepared: lost at close
  }
  manager r = two_phase::open(path_, any, true, small_options());
  EXPECT_EQ(r.epoch(), e);
  EXPECT_EQ(value(r, "x"), 1u);
}

TEST_F(TwoPhaseManager, PreparedEpochAboveTheAcceptedOneIsDiscarded) {
  std::uint64_t e0 = 0;
  {
    manager m = two_phase::create(path_, small_options());
    e0 = m.epoch();
    *m.construct<std::uint64_t>("x")() = 1;
    EXPECT_EQ(two_phase::prepare(m), e0 + 1);
  }  // undecided
  {
    manager m = two_phase::open(path_, e0, false, small_options());
    EXPECT_EQ(m.epoch(), e0);
    EXPECT_EQ(m.find<std::uint64_t>("x").first, nullptr) << "the refused epoch's object";
    EXPECT_TRUE(m.check().empty());
    *m.construct<std::uint64_t>("y")() = 5;
    EXPECT_EQ(two_phase::prepare(m), e0 + 1) << "the refused epoch's number is reused";
    EXPECT_EQ(two_phase::confirm(m), e0 + 1);
  }
  manager r = two_phase::open(path_, any, true, small_options());
  EXPECT_EQ(r.epoch(), e0 + 1);
  EXPECT_EQ(value(r, "y"), 5u);
  EXPECT_EQ(r.find<std::uint64_t>("x").first, nullptr);
}

TEST_F(TwoPhaseManager, AcceptedPreparedEpochIsConfirmedByAReadWriteOpen) {
  std::uint64_t e1 = 0;
  {
    manager m = two_phase::create(path_, small_options());
    *m.construct<std::uint64_t>("x")() = 7;
    e1 = two_phase::prepare(m);
  }
  {
    manager ro = two_phase::open(path_, e1, true, small_options());
    EXPECT_EQ(ro.epoch(), e1);
    EXPECT_EQ(value(ro, "x"), 7u);
  }
  {
    manager m = two_phase::open(path_, e1, false, small_options());
    EXPECT_EQ(m.epoch(), e1);
    EXPECT_FALSE(two_phase::prepared(m));
    EXPECT_EQ(value(m, "x"), 7u);
  }
  manager plain(open_read_only, path_, small_options());  // an ordinary open sees it too
  EXPECT_EQ(plain.epoch(), e1);
  EXPECT_EQ(value(plain, "x"), 7u);
}

TEST_F(TwoPhaseManager, SnapshotCopiesTheLastConfirmedEpochWithoutFlushing) {
  manager m = two_phase::create(path_, small_options());
  *m.construct<std::uint64_t>("x")() = 3;
  const std::uint64_t e = two_phase::prepare(m);
  two_phase::confirm(m);
  *m.find<std::uint64_t>("x").first = 4;  // not prepared
  EXPECT_EQ(m.snapshot(dir_ / "snap"), e);
  EXPECT_EQ(m.epoch(), e) << "the snapshot did not commit";
  manager s(open_read_only, dir_ / "snap", small_options());
  EXPECT_EQ(value(s, "x"), 3u);
}

TEST_F(TwoPhaseManager, MmapBackendIsRefusedAsUnavailable) {
  options o = small_options();
  o.backend = backend_kind::mmap;
  try {
    two_phase::create(path_, o);
    ADD_FAILURE() << "an mmap participant";
  } catch (const error& ex) {
    EXPECT_EQ(ex.code(), errc::unavailable) << ex.what();
    EXPECT_NE(std::string(ex.what()).find("uffd"), std::string::npos) << ex.what();
  }
}

}  // namespace
}  // namespace pheap::test
