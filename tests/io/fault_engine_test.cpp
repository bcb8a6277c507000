// The fault-injecting engine: counting, rules, crashes, and the power-cut model (pheap/io.hpp).
// After a power cut the files are inspected through a fresh posix engine, as a reopening
// process would.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <vector>

#include "common/test_util.hpp"
#include "pheap/error.hpp"
#include "pheap/io.hpp"
#include "support/fault_engine.hpp"

namespace pheap {
namespace {

using test::cut_policy;
using test::fault_action;
using test::op_kind;
using io::open_mode;
using test::temp_dir;

using bytes = std::vector<std::uint8_t>;

bytes read_file(const std::string& path) {
  auto eng = io::make_posix_engine();
  auto f = eng->open(path, open_mode::read_only);
  bytes v(eng->size(*f));
  eng->read_at(*f, 0, v.data(), v.size());
  return v;
}

bool file_exists(const std::string& path) { return io::make_posix_engine()->exists(path); }

TEST(IoFaultEngine, CountsEveryRequestOfABatchUnderItsKind) {
  temp_dir dir;
  auto fe = test::make_fault_engine(io::make_posix_engine());
  EXPECT_EQ(fe->name(), "fault(posix)");
  auto f = fe->open(dir / "a", open_mode::create);  // metadata 1
  bytes buf(4096, 1);
  io::write_request w[] = {{f.get(), 0, buf.data(), 4096}, {f.get(), 4096, buf.data(), 4096},
                           {f.get(), 8192, buf.data(), 4096}};
  fe->write(w);                                  // write 3
  fe->read_at(*f, 0, buf.data(), 4096);          // read 1
  fe->sync(*f);                                  // sync 1
  fe->sync_dir(dir.path());                      // sync 2
  fe->truncate(*f, 100);                         // metadata 2
  fe->punch_hole(*f, 0, 50);                     // metadata 3
  fe->rename(dir / "a", dir / "b");              // metadata 4
  EXPECT_TRUE(fe->exists(dir / "b"));            // not counted
  EXPECT_EQ(fe->size(*f), 100u);                 // not counted
  EXPECT_EQ(fe->operations(op_kind::write), 3u);
  EXPECT_EQ(fe->operations(op_kind::read), 1u);
  EXPECT_EQ(fe->operations(op_kind::sync), 2u);
  EXPECT_EQ(fe->operations(op_kind::metadata), 4u);
  EXPECT_EQ(fe->operations(op_kind::any), 10u);
}

TEST(IoFaultEngine, FailedRequestInsideABatchStopsTheBatchWithEarlierRequestsDone) {
  temp_dir dir;
  auto fe = test::make_fault_engine(io::make_posix_engine());
  fe->add_rule({op_kind::write, 2, fault_action::fail_eio, false});
  auto f = fe->open(dir / "a", open_mode::create);
  const bytes a(512, 'a'), b(512, 'b'), c(512, 'c');
  io::write_request w[] = {{f.get(), 0, a.data(), 512}, {f.get(), 512, b.data(), 512},
                           {f.get(), 1024, c.data(), 512}};
  EXPECT_THROW(fe->write(w), error);
  EXPECT_EQ(read_file(dir / "a"), a) << "request 1 done, request 2 failed, request 3 not run";
}

TEST(IoFaultEngine, StickyRuleFailsEveryLaterOperationOfItsKind) {
  temp_dir dir;
  auto fe = test::make_fault_engine(io::make_posix_engine());
  auto f = fe->open(dir / "a", open_mode::create);
  fe->add_rule({op_kind::sync, 2, fault_action::fail_eio, true});
  fe->sync(*f);
  for (int i = 0; i < 5; ++i) EXPECT_THROW(fe->sync(*f), error) << "sync " << i + 2;
  bytes buf(512, 7);
  EXPECT_NO_THROW(fe->write_at(*f, 0, buf.data(), 512)) << "other kinds are unaffected";
  fe->clear_rules();
  EXPECT_NO_THROW(fe->sync(*f));
}

TEST(IoFaultEngine, RuleWithNthZeroNeverFires) {
  temp_dir dir;
  auto fe = test::make_fault_engine(io::make_posix_engine());
  fe->add_rule({op_kind::any, 0, fault_action::fail_eio, true});
  auto f = fe->open(dir / "a", open_mode::create);
  bytes buf(512, 7);
  fe->write_at(*f, 0, buf.data(), 512);
  fe->sync(*f);
  EXPECT_EQ(read_file(dir / "a"), buf);
}

TEST(IoFaultEngine, CrashRuleExitsWith86BeforeTheNthOperation) {
  temp_dir dir;
  const std::string path = dir / "c";
  const int status = test::run_in_child([&] {
    auto fe = test::make_fault_engine(io::make_posix_engine());
    fe->add_rule({op_kind::write, 3, fault_action::crash, false});
    auto f = fe->open(path, open_mode::create);
    for (int i = 0; i < 5; ++i) {
      const bytes b(512, static_cast<std::uint8_t>('0' + i));
      fe->write_at(*f, i * 512ull, b.data(), b.size());
    }
  });
  EXPECT_EQ(status, 86);
  const bytes got = read_file(path);
  ASSERT_EQ(got.size(), 1024u) << "writes 1 and 2 happened, write 3 did not";
  EXPECT_EQ(got[0], '0');
  EXPECT_EQ(got[512], '1');
}

TEST(IoFaultEngine, CrashAtEnvironmentVariableInstallsACrashRule) {
  temp_dir dir;
  const std::string path = dir / "env";
  const int status = test::run_in_child([&] {
    ::setenv("PHEAP_FAULT_CRASH_AT", "sync:2", 1);
    auto fe = test::make_fault_engine(io::make_posix_engine());
    auto f = fe->open(path, open_mode::create);
    for (int i = 0; i < 4; ++i) {
      const bytes b(512, static_cast<std::uint8_t>('0' + i));
      fe->write_at(*f, i * 512ull, b.data(), b.size());
      fe->sync(*f);
    }
  });
  EXPECT_EQ(status, 86);
  EXPECT_EQ(read_file(path).size(), 1024u) << "crashed at the second sync, after two writes";
}

TEST(IoFaultEngine, MalformedCrashAtEnvironmentVariableIsRejected) {
  const int status = test::run_in_child([] {
    ::setenv("PHEAP_FAULT_CRASH_AT", "writes:x", 1);
    try {
      test::make_fault_engine(io::make_posix_engine());
    } catch (const error& e) {
      _exit(e.code() == errc::invalid_argument ? 7 : 8);
    }
  });
  EXPECT_EQ(status, 7);
}

// ---- power cut ----------------------------------------------------------------------------

// A file with synced content `old` (and its directory entry synced), then unsynced writes.
struct cut_fixture {
  temp_dir dir;
  std::shared_ptr<test::fault_engine> fe = test::make_fault_engine(io::make_posix_engine());
  std::string path = dir / "data";
  std::unique_ptr<io::file> f;
  bytes old = test::pattern(16 * 4096, 1, 0, 0);

  cut_fixture() {
    f = fe->open(path, open_mode::create_new);
    fe->write_at(*f, 0, old.data(), old.size());
    fe->sync(*f);
    fe->sync_dir(dir.path());
  }
};

TEST(IoFaultEnginePowerCut, DropAllRestoresTheLastSyncedContentAndSize) {
  cut_fixture fx;
  const bytes v2 = test::pattern(8 * 4096, 1, 0, 2);
  fx.fe->write_at(*fx.f, 4 * 4096, v2.data(), v2.size());      // overwrite
  fx.fe->write_at(*fx.f, 20 * 4096, v2.data(), v2.size());     // extend with a gap
  fx.fe->truncate(*fx.f, 2 * 4096);                            // shrink
  fx.fe->write_at(*fx.f, 0, v2.data(), 4096);                  // and overwrite again
  fx.fe->power_cut(cut_policy::drop_all, 1);
  EXPECT_EQ(read_file(fx.path), fx.old);
}

TEST(IoFaultEnginePowerCut, SyncedWritesSurviveAndLaterOnesAreDropped) {
  cut_fixture fx;
  const bytes v2 = test::pattern(4096, 2, 0, 0), v3 = test::pattern(4096, 3, 0, 0);
  fx.fe->write_at(*fx.f, 0, v2.data(), 4096);
  fx.fe->sync(*fx.f);
  fx.fe->write_at(*fx.f, 0, v3.data(), 4096);
  fx.fe->power_cut(cut_policy::drop_all, 1);
  bytes expect = fx.old;
  std::copy(v2.begin(), v2.end(), expect.begin());
  EXPECT_EQ(read_file(fx.path), expect);
}

TEST(IoFaultEnginePowerCut, FailedSyncDoesNotMakeWritesDurable) {
  cut_fixture fx;
  fx.fe->add_rule({op_kind::sync, 3, fault_action::fail_eio, false});  // after 2 fixture syncs
  const bytes v2 = test::pattern(4096, 2, 0, 0);
  fx.fe->write_at(*fx.f, 0, v2.data(), 4096);
  EXPECT_THROW(fx.fe->sync(*fx.f), error);
  fx.fe->power_cut(cut_policy::drop_all, 1);
  EXPECT_EQ(read_file(fx.path), fx.old);
}

TEST(IoFaultEnginePowerCut, KeepAllKeepsEveryUnsyncedWrite) {
  cut_fixture fx;
  const bytes v2 = test::pattern(8 * 4096, 1, 0, 2);
  fx.fe->write_at(*fx.f, 4 * 4096, v2.data(), v2.size());
  fx.fe->write_at(*fx.f, 20 * 4096, v2.data(), v2.size());
  bytes expect(28 * 4096, 0);
  std::copy(fx.old.begin(), fx.old.end(), expect.begin());
  std::copy(v2.begin(), v2.end(), expect.begin() + 4 * 4096);
  std::copy(v2.begin(), v2.end(), expect.begin() + 20 * 4096);
  fx.fe->power_cut(cut_policy::keep_all, 1);
  EXPECT_EQ(read_file(fx.path), expect);
}

TEST(IoFaultEnginePowerCut, RandomTearsWritesAtSectorGranularityAndVariesOverSeeds) {
  constexpr std::size_t kSector = 512;
  constexpr int kWrites = 4;
  constexpr std::size_t kWriteLen = 8 * kSector;
  int fully_new = 0, fully_old = 0, torn = 0;
  std::set<bytes> distinct_outcomes;
  for (std::uint64_t seed = 0; seed < 24; ++seed) {
    cut_fixture fx;
    std::vector<bytes> news;
    for (int w = 0; w < kWrites; ++w) {
      news.push_back(test::pattern(kWriteLen, 9, static_cast<std::uint64_t>(w), seed));
      fx.fe->write_at(*fx.f, w * kWriteLen, news.back().data(), kWriteLen);
    }
    fx.fe->power_cut(cut_policy::random, seed);
    const bytes got = read_file(fx.path);
    ASSERT_EQ(got.size(), fx.old.size());
    distinct_outcomes.insert(got);
    for (int w = 0; w < kWrites; ++w) {
      int n_new = 0, n_old = 0;
      for (std::size_t s = 0; s < kWriteLen / kSector; ++s) {
        const std::size_t off = w * kWriteLen + s * kSector;
        const bool is_new = std::equal(got.begin() + off, got.begin() + off + kSector,
                                       news[w].begin() + s * kSector);
        const bool is_old = std::equal(got.begin() + off, got.begin() + off + kSector,
                                       fx.old.begin() + off);
        ASSERT_TRUE(is_new || is_old) << "seed " << seed << " write " << w << " sector " << s
                                      << " is neither old nor new content";
        n_new += is_new;
        n_old += is_old;
      }
      if (n_old == 0) ++fully_new;
      else if (n_new == 0) ++fully_old;
      else ++torn;
    }
    // Bytes outside the writes are untouched.
    EXPECT_TRUE(std::equal(got.begin() + kWrites * kWriteLen, got.end(),
                           fx.old.begin() + kWrites * kWriteLen));
  }
  EXPECT_GT(fully_new, 0);
  EXPECT_GT(fully_old, 0);
  EXPECT_GT(torn, 0);
  EXPECT_GT(distinct_outcomes.size(), 12u) << "different seeds must give different cuts";
}

TEST(IoFaultEnginePowerCut, SameSeedGivesTheSameOutcome) {
  bytes first;
  for (int round = 0; round < 2; ++round) {
    cut_fixture fx;
    for (int w = 0; w < 6; ++w) {
      const bytes b = test::pattern(4096, 5, static_cast<std::uint64_t>(w), 0);
      fx.fe->write_at(*fx.f, w * 4096ull, b.data(), b.size());
    }
    fx.fe->power_cut(cut_policy::random, 42);
    if (round == 0) first = read_file(fx.path);
    else EXPECT_EQ(read_file(fx.path), first);
  }
}

TEST(IoFaultEnginePowerCut, FileCreatedSinceLastDirectorySyncVanishes) {
  cut_fixture fx;
  auto g = fx.fe->open(fx.dir / "new", open_mode::create_new);
  const bytes b(4096, 'n');
  fx.fe->write_at(*g, 0, b.data(), b.size());
  fx.fe->sync(*g);  // data synced, but not the directory entry
  auto h = fx.fe->open(fx.dir / "dirsynced", open_mode::create);
  fx.fe->write_at(*h, 0, b.data(), b.size());
  fx.fe->sync(*h);
  fx.fe->sync_dir(fx.dir.path());
  auto k = fx.fe->open(fx.dir / "late", open_mode::create);
  fx.fe->create_dir(fx.dir / "subdir");
  fx.fe->power_cut(cut_policy::drop_all, 1);
  // "new" was created before the second sync_dir, so it survives too.
  EXPECT_TRUE(file_exists(fx.dir / "new"));
  EXPECT_EQ(read_file(fx.dir / "dirsynced"), b);
  EXPECT_FALSE(file_exists(fx.dir / "late"));
  EXPECT_FALSE(file_exists(fx.dir / "subdir"));
  EXPECT_EQ(read_file(fx.path), fx.old);
}

TEST(IoFaultEnginePowerCut, CreatedUnsyncedFileSurvivesKeepAllAndVariesUnderRandom) {
  {
    cut_fixture fx;
    fx.fe->open(fx.dir / "late", open_mode::create_new);
    fx.fe->power_cut(cut_policy::keep_all, 1);
    EXPECT_TRUE(file_exists(fx.dir / "late"));
  }
  int vanished = 0, stayed = 0;
  for (std::uint64_t seed = 0; seed < 16; ++seed) {
    cut_fixture fx;
    fx.fe->open(fx.dir / "late", open_mode::create_new);
    fx.fe->power_cut(cut_policy::random, seed);
    (file_exists(fx.dir / "late") ? stayed : vanished)++;
  }
  EXPECT_GT(vanished, 0);
  EXPECT_GT(stayed, 0);
}

TEST(IoFaultEnginePowerCut, UnsyncedRenameIsUndoneAndTheReplacedTargetComesBack) {
  cut_fixture fx;
  // Atomic-replace pattern without the final directory sync.
  const std::string tmp = fx.dir / "data.tmp";
  auto t = fx.fe->open(tmp, open_mode::create_new);
  const bytes b(4096, 'r');
  fx.fe->write_at(*t, 0, b.data(), b.size());
  fx.fe->sync(*t);
  fx.fe->rename(tmp, fx.path);
  EXPECT_EQ(fx.fe->list_dir(fx.dir.path()), std::vector<std::string>{"data"})
      << "the engine's bookkeeping files are not listed";
  fx.fe->power_cut(cut_policy::drop_all, 1);
  EXPECT_EQ(read_file(fx.path), fx.old);
  EXPECT_FALSE(file_exists(tmp)) << "the temporary was never durably created";
  EXPECT_EQ(io::make_posix_engine()->list_dir(fx.dir.path()), std::vector<std::string>{"data"});
}

TEST(IoFaultEnginePowerCut, RenameFollowedByDirectorySyncSurvives) {
  cut_fixture fx;
  const std::string tmp = fx.dir / "data.tmp";
  auto t = fx.fe->open(tmp, open_mode::create_new);
  const bytes b(4096, 'r');
  fx.fe->write_at(*t, 0, b.data(), b.size());
  fx.fe->sync(*t);
  fx.fe->rename(tmp, fx.path);
  fx.fe->sync_dir(fx.dir.path());
  fx.fe->power_cut(cut_policy::drop_all, 1);
  EXPECT_EQ(read_file(fx.path), b);
  EXPECT_EQ(io::make_posix_engine()->list_dir(fx.dir.path()), std::vector<std::string>{"data"});
}

TEST(IoFaultEnginePowerCut, UnsyncedPunchHoleIsRolledBackUnderDropAll) {
  cut_fixture fx;
  fx.fe->punch_hole(*fx.f, 4096, 8192);
  fx.fe->power_cut(cut_policy::drop_all, 1);
  EXPECT_EQ(read_file(fx.path), fx.old);
}

TEST(IoFaultEnginePowerCut, EveryOperationAfterTheCutThrowsPowerLost) {
  cut_fixture fx;
  fx.fe->power_cut(cut_policy::keep_all, 1);
  bytes buf(512);
  auto expect_lost = [](auto&& fn) {
    try {
      fn();
      ADD_FAILURE() << "no exception";
    } catch (const error& e) {
      EXPECT_EQ(e.code(), errc::io);
      EXPECT_NE(std::string(e.what()).find("power lost"), std::string::npos) << e.what();
    }
  };
  expect_lost([&] { fx.fe->read_at(*fx.f, 0, buf.data(), buf.size()); });
  expect_lost([&] { fx.fe->write_at(*fx.f, 0, buf.data(), buf.size()); });
  expect_lost([&] { fx.fe->sync(*fx.f); });
  expect_lost([&] { fx.fe->open(fx.path, open_mode::read_only); });
  expect_lost([&] { fx.fe->exists(fx.path); });
  expect_lost([&] { fx.fe->size(*fx.f); });
  expect_lost([&] { fx.fe->power_cut(cut_policy::keep_all, 1); });
  EXPECT_EQ(read_file(fx.path), fx.old) << "a fresh engine still reads the file";
}

TEST(IoFaultEnginePowerCut, WorksOverTheUringEngineToo) {
  std::shared_ptr<io::engine> inner;
  try {
    inner = io::make_uring_engine(8);
  } catch (const error& e) {
    if (e.code() != errc::unavailable) throw;
    PHEAP_REQUIRE_FEATURE(std::string("io_uring: ") + e.what());
  }
  temp_dir dir;
  auto fe = test::make_fault_engine(inner);
  EXPECT_EQ(fe->name(), "fault(io_uring)");
  auto f = fe->open(dir / "u", open_mode::create_new);
  fe->sync_dir(dir.path());
  const bytes v1 = test::pattern(64 * 1024, 3, 0, 1), v2 = test::pattern(64 * 1024, 3, 0, 2);
  std::vector<io::write_request> w;
  for (int i = 0; i < 16; ++i) w.push_back({f.get(), i * 4096ull, v1.data() + i * 4096, 4096});
  fe->write(w);
  fe->sync(*f);
  for (auto& r : w) r.buf = v2.data() + (r.offset);
  fe->write(w);
  fe->power_cut(cut_policy::drop_all, 1);
  EXPECT_EQ(read_file(dir / "u"), v1);
}

}  // namespace
}  // namespace pheap
