// Two-phase commit through the pager (pager::prepare / confirm over sparse_store's, FORMAT.md
// "Two-phase commit"): a prepared epoch holds every write made before it, is taken at open
// only when the caller accepts it, blocks flush()/prepare() until confirmed, and an eviction
// that waits on it resumes at confirm().
#include <atomic>
#include <chrono>
#include <thread>

#include "pager_test_util.hpp"

namespace pheap::test {
namespace {

constexpr std::size_t kPs = 4096;
constexpr std::size_t kPages = 64;

class PagerTwoPhase : public ::testing::Test {
 protected:
  void SetUp() override { PHEAP_REQUIRE_UFFD(dirty_tracking::automatic); }
  static pager_options small_buffer() {
    pager_options o;
    o.buffer_size = 8 * kPs;  // 64 pages written → evictions
    return o;
  }
  static void fill(pager& pg, std::uint8_t v) {
    for (std::size_t p = 0; p < kPages; ++p) pg.base()[p * kPs + p % kPs] = std::byte(v);
  }
  static std::size_t count_not(pager& pg, std::uint8_t v) {
    std::size_t bad = 0;
    for (std::size_t p = 0; p < kPages; ++p) bad += pg.base()[p * kPs + p % kPs] != std::byte(v);
    return bad;
  }
  std::unique_ptr<sparse_store> reopen(std::uint64_t max_epoch) {
    store_options o;
    o.engine = b_.engine();
    o.max_epoch = max_epoch;
    return sparse_store::open(b_.path(), o);
  }
  backing b_{"posix"};
};

TEST_F(PagerTwoPhase, PreparedEpochIsTakenAtOpenOnlyWhenAccepted) {
  std::uint64_t e1 = 0, e2 = 0;
  {
    pager pg(b_.create(kPages * kPs, kPs), small_buffer());
    fill(pg, 1);
    e1 = pg.flush({});
    fill(pg, 2);
    e2 = pg.prepare({});
    EXPECT_EQ(e2, e1 + 1);
    EXPECT_EQ(pg.store().epoch(), e1) << "a prepared epoch is not the watermark";
    EXPECT_TRUE(pg.store().prepared());
    for (int call = 0; call < 2; ++call) {
      try {
        if (call == 0) pg.flush({});
        if (call == 1) pg.prepare({});
        ADD_FAILURE() << "flush/prepare while an epoch is prepared";
      } catch (const error& e) {
        EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
        EXPECT_NE(std::string(e.what()).find("prepared"), std::string::npos) << e.what();
      }
    }
  }  // closed undecided
  {
    pager pg(reopen(e1), small_buffer());
    EXPECT_EQ(pg.store().epoch(), e1);
    EXPECT_EQ(count_not(pg, 1), 0u) << "refusing the prepared epoch gives back epoch 1 whole";
    fill(pg, 2);
    EXPECT_EQ(pg.prepare({}), e1 + 1) << "the refused epoch's slot is reused";
  }
  pager pg(reopen(e1 + 1), small_buffer());
  EXPECT_EQ(pg.store().epoch(), e1 + 1) << "an accepted prepared epoch is the watermark";
  EXPECT_FALSE(pg.store().prepared());
  EXPECT_EQ(count_not(pg, 2), 0u);
}

TEST_F(PagerTwoPhase, ConfirmReleasesEvictionsThatWaitOnThePreparedEpoch) {
  std::uint64_t e2 = 0, e3 = 0;
  {
    pager pg(b_.create(kPages * kPs, kPs), small_buffer());
    fill(pg, 1);
    pg.flush({});
    fill(pg, 2);
    e2 = pg.prepare({});
    std::atomic<bool> done{false};
    // Rewriting every page through an 8-page buffer evicts pages epoch 2 changed: their
    // write-back waits in the store until confirm().
    std::thread writer([&] {
      fill(pg, 3);
      done = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_EQ(pg.confirm(), e2);
    writer.join();
    EXPECT_TRUE(done);
    EXPECT_EQ(pg.store().epoch(), e2);
    EXPECT_THROW(pg.confirm(), error) << "nothing is prepared any more";
    e3 = pg.flush({});
    EXPECT_EQ(e3, e2 + 1);
  }
  pager pg(reopen(~std::uint64_t{0}), small_buffer());
  EXPECT_EQ(pg.store().epoch(), e3);
  EXPECT_EQ(count_not(pg, 3), 0u);
}

TEST_F(PagerTwoPhase, ReadOnlyPagerRefusesPrepareAndConfirm) {
  {
    pager pg(b_.create(kPages * kPs, kPs), small_buffer());
    fill(pg, 1);
    pg.flush({});
  }
  store_options o;
  o.read_only = true;
  o.engine = b_.engine();
  pager pg(sparse_store::open(b_.path(), o), small_buffer());
  for (int call = 0; call < 2; ++call) {
    try {
      if (call == 0) pg.prepare({});
      if (call == 1) pg.confirm();
      ADD_FAILURE() << "a read-only pager prepared or confirmed";
    } catch (const error& e) {
      EXPECT_EQ(e.code(), errc::read_only) << e.what();
    }
  }
}

}  // namespace
}  // namespace pheap::test
