// Atomic datastore creation: sparse_store::create builds the datastore in a sibling
// ".<name>.creating-XXXXXX" directory and renames it into place, so a process that dies at any
// point of create() leaves the path either absent (open → not_found) — or the empty directory
// it was, when create() was asked to fill one — or holding a complete epoch-0 datastore. Never
// a directory that opens as not_a_datastore or corrupt. Proven here by SIGKILL at random
// moments, by a crash (PHEAP_FAULT_CRASH_AT) before every single I/O operation and every sync
// of create(), and by a simulated power cut at every operation; plus the leftover-cleanup and
// concurrency rules of the creation directory.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <random>
#include <thread>

#include "store_test_util.hpp"
#include "support/fault_engine.hpp"

namespace pheap::test {
namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kCapacity = 1 << 20;
constexpr std::uint32_t kPageSize = 4096;
constexpr std::uint64_t kSegmentSize = 64 << 10;

// What a path holds after a (possibly interrupted) create().
enum class outcome { absent, empty_dir, datastore };

// Names in `parent` that are creation directories of `name`.
std::vector<std::string> creation_leftovers(const std::string& parent, const std::string& name) {
  std::vector<std::string> v;
  const std::string prefix = "." + name + ".creating-";
  for (const auto& e : fs::directory_iterator(parent)) {
    const std::string n = e.path().filename().string();
    if (n.rfind(prefix, 0) == 0) v.push_back(n);
  }
  return v;
}

// Runs `body` in a forked child; returns the raw wait status. The child exits 0 when `body`
// returns, 1 (message on stderr) when it throws.
int run_in_child(const std::function<void()>& body) {
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    try {
      body();
      ::_exit(0);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
      ::_exit(1);
    }
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

std::string describe(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

class StoreCreateCrash : public store_test {
 protected:
  store_options create_opts(std::shared_ptr<io::engine> eng) const {
    store_options o;
    o.capacity = kCapacity;
    o.page_size = kPageSize;
    o.segment_size = kSegmentSize;
    o.engine = std::move(eng);
    return o;
  }

  // Classifies what `path` holds after an interrupted create() and checks it is one of the
  // allowed states; a datastore must be exactly a fresh epoch-0 datastore of our geometry and
  // fully usable (a commit and reopen round trip). `was_empty_dir`: create() was filling an
  // existing empty directory.
  outcome check_state(const std::string& path, bool was_empty_dir, const std::string& ctx) {
    store_options o;
    o.engine = io::make_posix_engine();
    std::unique_ptr<sparse_store> s;
    try {
      s = sparse_store::open(path, o);
    } catch (const error& e) {
      if (e.code() == errc::not_found) {
        EXPECT_FALSE(fs::exists(path)) << ctx;
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << ctx << ": " << e.what();
        return outcome::absent;
      }
      if (was_empty_dir && e.code() == errc::not_a_datastore && fs::is_directory(path) &&
          fs::is_empty(path)) {
        return outcome::empty_dir;
      }
      ADD_FAILURE() << ctx << ": interrupted create left " << path << " unopenable: "
                    << to_string(e.code()) << ": " << e.what();
      return outcome::absent;
    }
    EXPECT_EQ(s->epoch(), 0u) << ctx;
    EXPECT_TRUE(s->root().empty()) << ctx;
    EXPECT_EQ(s->capacity(), kCapacity) << ctx;
    EXPECT_EQ(s->page_size(), kPageSize) << ctx;
    EXPECT_EQ(s->segment_size(), kSegmentSize) << ctx;
    EXPECT_NE(s->id(), uuid{}) << ctx;
    EXPECT_TRUE(is_zero(read_one(*s, 0))) << ctx;
    EXPECT_TRUE(is_zero(read_one(*s, kCapacity / kPageSize - 1))) << ctx;
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(path)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    // (the reader table: made by the first attach, this open's at the latest)
    EXPECT_EQ(names, (std::vector<std::string>{"pheap.map", "pheap.readers", "pheap.super"})) << ctx;
    // Usable, not merely openable.
    write_one(*s, 3, 77, 1);
    EXPECT_EQ(s->commit(bytes_of("r1")), 1u) << ctx;
    s.reset();
    s = sparse_store::open(path, o);
    EXPECT_EQ(s->epoch(), 1u) << ctx;
    EXPECT_EQ(read_one(*s, 3), pattern(kPageSize, 77, 3, 1)) << ctx;
    return outcome::datastore;
  }

  // After an interrupted create() of `name` in `parent`: a later create() of the same name
  // (when the path is free again) succeeds and leaves no creation directory behind.
  void check_retry_cleans_up(const std::string& parent, const std::string& name, outcome got,
                             const std::string& ctx) {
    const std::string path = parent + "/" + name;
    if (got == outcome::datastore) {
      try {
        sparse_store::create(path, create_opts(io::make_posix_engine()));
        ADD_FAILURE() << ctx << ": create over an existing datastore did not throw";
      } catch (const error& e) {
        EXPECT_EQ(e.code(), errc::already_exists) << ctx << ": " << e.what();
      }
      fs::remove_all(path);
    }
    EXPECT_NO_THROW(sparse_store::create(path, create_opts(io::make_posix_engine()))) << ctx;
    EXPECT_TRUE(creation_leftovers(parent, name).empty()) << ctx;
  }

  // Operations (of `kind`) a complete create() performs with a fault engine over engine().
  std::uint64_t create_op_count(test::op_kind kind) {
    temp_dir d;
    auto fe = test::make_fault_engine(engine());
    sparse_store::create(d / "ds", create_opts(fe)).reset();
    return fe->operations(kind);
  }

  // Crash sweep: for n = 1 .. ops+1, a child runs create() with PHEAP_FAULT_CRASH_AT=
  // <spec>:n. Every n ≤ ops must kill it (exit 86) and leave an allowed state; n = ops+1 must
  // complete. Returns how many crashes left a datastore (the rest left nothing).
  std::pair<int, int> crash_sweep(const std::string& spec, std::uint64_t ops, bool into_empty_dir) {
    int datastores = 0, absents = 0;
    for (std::uint64_t n = 1; n <= ops + 1; ++n) {
      temp_dir d;
      const std::string path = d / "ds";
      if (into_empty_dir) fs::create_directory(path);
      const std::string env = spec + ":" + std::to_string(n);
      const std::string name = GetParam();
      const int status = run_in_child([&] {
        ::setenv("PHEAP_FAULT_CRASH_AT", env.c_str(), 1);
        auto fe = test::make_fault_engine(make_engine(name));
        sparse_store::create(path, create_opts(fe)).reset();
      });
      const std::string ctx = "PHEAP_FAULT_CRASH_AT=" + env;
      if (n <= ops) {
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 86) << ctx << ": " << describe(status);
      } else {
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << ctx << ": " << describe(status);
      }
      const outcome got = check_state(path, into_empty_dir, ctx);
      if (n > ops) {
        EXPECT_EQ(got, outcome::datastore) << ctx << ": a completed create";
      }
      (got == outcome::datastore ? datastores : absents)++;
      if (got == outcome::datastore) fs::remove_all(path);
      if (got == outcome::empty_dir) fs::remove(path);
      check_retry_cleans_up(d.path(), "ds", outcome::absent, ctx);
      if (HasFailure()) break;  // one diagnosis is enough
    }
    return {datastores, absents};
  }
};

TEST_P(StoreCreateCrash, CrashBeforeEveryIoOperationOfCreateLeavesNothingOrAnEpochZeroDatastore) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::uint64_t ops = create_op_count(test::op_kind::any);
  ASSERT_GE(ops, 6u);  // mkdir, open ×3, writes, truncate, syncs, rename, sync_dir, opens
  const auto [datastores, absents] = crash_sweep("any", ops, false);
  // Early crash points leave nothing, crash points after the rename a datastore; both happen.
  EXPECT_GE(datastores, 2);
  EXPECT_GE(absents, 2);
  std::printf("PHEAP_RESULT scenario=store_create_crash_every_op_%s iterations=%llu failures=%d "
              "data_lost=0 seconds=%.1f\n",
              GetParam().c_str(), static_cast<unsigned long long>(ops + 1), HasFailure() ? 1 : 0,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

TEST_P(StoreCreateCrash, CrashBeforeEverySyncOfCreateLeavesNothingOrAnEpochZeroDatastore) {
  const std::uint64_t syncs = create_op_count(test::op_kind::sync);
  ASSERT_EQ(syncs, 4u);  // pheap.map, pheap.super, their directory, the parent
  const auto [datastores, absents] = crash_sweep("sync", syncs, false);
  EXPECT_EQ(absents, 3);     // before the rename
  EXPECT_EQ(datastores, 2);  // crash at the parent's sync (rename done), and completion
}

TEST_P(StoreCreateCrash, CrashWhileFillingAnEmptyDirectoryLeavesItEmptyOrAnEpochZeroDatastore) {
  const std::uint64_t ops = create_op_count(test::op_kind::any);
  const auto [datastores, others] = crash_sweep("any", ops, true);
  EXPECT_GE(datastores, 2);
  EXPECT_GE(others, 2);
}

TEST_P(StoreCreateCrash, SigkillAtRandomMomentsOfCreateLeavesNothingOrAnEpochZeroDatastore) {
  // Time a few creates to spread the kills over the whole call (and a little beyond).
  const auto t_start = std::chrono::steady_clock::now();
  std::chrono::nanoseconds total{0};
  for (int i = 0; i < 5; ++i) {
    temp_dir d;
    const auto t0 = std::chrono::steady_clock::now();
    sparse_store::create(d / "ds", create_opts(engine())).reset();
    total += std::chrono::steady_clock::now() - t0;
  }
  const auto span_us = std::max<std::int64_t>(
      50, std::chrono::duration_cast<std::chrono::microseconds>(total).count() / 5 * 3 / 2);
  std::mt19937_64 rng(std::random_device{}());
  const int iterations = 60;
  int datastores = 0, absents = 0;
  const std::string name = GetParam();
  for (int it = 0; it < iterations; ++it) {
    temp_dir d;
    const std::string path = d / "ds";
    int go[2];
    ASSERT_EQ(::pipe2(go, O_CLOEXEC), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(go[0]);
      try {
        auto eng = make_engine(name);
        const char c = 'g';
        if (::write(go[1], &c, 1) != 1) ::_exit(3);
        sparse_store::create(path, create_opts(eng)).reset();
        ::pause();  // wait for the kill: the test only ever ends us with SIGKILL
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child: %s\n", e.what());
        ::_exit(1);
      }
      ::_exit(0);
    }
    ::close(go[1]);
    char c = 0;
    ASSERT_EQ(::read(go[0], &c, 1), 1);
    ::close(go[0]);
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % static_cast<std::uint64_t>(span_us)));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << describe(status);
    const std::string ctx = "kill " + std::to_string(it);
    const outcome got = check_state(path, false, ctx);
    (got == outcome::datastore ? datastores : absents)++;
    check_retry_cleans_up(d.path(), "ds", got, ctx);
    if (HasFailure()) break;
  }
  std::printf("random SIGKILL over %lld us: %d datastores, %d absent\n",
              static_cast<long long>(span_us), datastores, absents);
  std::printf("PHEAP_RESULT scenario=store_create_sigkill_%s iterations=%d failures=%d "
              "data_lost=0 seconds=%.1f\n",
              name.c_str(), datastores + absents, HasFailure() ? 1 : 0,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count());
}

// A power cut (through the fault engine's model: unsynced writes dropped, torn or kept,
// unsynced names undone) at every operation of create(): from operation n on everything fails
// (so create() cannot even clean up), then the cut. The path holds nothing or a datastore.
TEST_P(StoreCreateCrash, PowerCutAtEveryOperationOfCreateLeavesNothingOrAnEpochZeroDatastore) {
  const std::uint64_t ops = create_op_count(test::op_kind::any);
  int datastores = 0, absents = 0;
  for (std::uint64_t n = 1; n <= ops + 1; ++n) {
    for (const auto policy : {test::cut_policy::drop_all, test::cut_policy::keep_all,
                              test::cut_policy::random}) {
      for (std::uint64_t seed = 0; seed < (policy == test::cut_policy::random ? 4u : 1u); ++seed) {
        temp_dir d;
        const std::string path = d / "ds";
        auto fe = test::make_fault_engine(engine());
        fe->add_rule({test::op_kind::any, n, test::fault_action::fail_eio, true});
        bool completed = false;
        try {
          sparse_store::create(path, create_opts(fe)).reset();
          completed = true;
        } catch (const error& e) {
          EXPECT_EQ(e.code(), errc::io) << e.what();
        }
        EXPECT_EQ(completed, n > ops) << "n=" << n;
        fe->power_cut(policy, seed);
        const std::string ctx = "cut at op " + std::to_string(n) + " policy " +
                                std::to_string(static_cast<int>(policy)) + " seed " +
                                std::to_string(seed);
        const outcome got = check_state(path, false, ctx);
        // A create() that returned is durable whatever the cut drops.
        if (completed) {
          EXPECT_EQ(got, outcome::datastore) << ctx;
        }
        (got == outcome::datastore ? datastores : absents)++;
        check_retry_cleans_up(d.path(), "ds", got, ctx);
        if (HasFailure()) return;
      }
    }
  }
  EXPECT_GT(datastores, 0);
  EXPECT_GT(absents, 0);
}

TEST_P(StoreCreateCrash, FailedCreateRemovesItsCreationDirectoryAndLeavesThePathAsItWas) {
  const std::uint64_t ops = create_op_count(test::op_kind::any);
  for (std::uint64_t n = 1; n <= ops; ++n) {
    for (const bool into_empty : {false, true}) {
      temp_dir d;
      const std::string path = d / "ds";
      if (into_empty) fs::create_directory(path);
      auto fe = test::make_fault_engine(engine());
      fe->add_rule({test::op_kind::any, n, test::fault_action::fail_enospc, false});
      try {
        sparse_store::create(path, create_opts(fe)).reset();
        ADD_FAILURE() << "op " << n << ": create succeeded despite ENOSPC";
      } catch (const error& e) {
        EXPECT_EQ(e.code(), errc::no_space) << "op " << n << ": " << e.what();
      }
      EXPECT_TRUE(creation_leftovers(d.path(), "ds").empty()) << "op " << n;
      if (into_empty) {
        EXPECT_TRUE(fs::is_directory(path) && fs::is_empty(path)) << "op " << n;
      } else {
        EXPECT_FALSE(fs::exists(path)) << "op " << n;
      }
    }
  }
}

TEST_P(StoreCreateCrash, LeftoverCreationDirectoriesAreRemovedByTheNextCreateOfTheSameName) {
  temp_dir d;
  // Leftovers of crashed creates of "ds": one empty, one with a half-written superblock.
  fs::create_directory(d / ".ds.creating-aaaaaa");
  fs::create_directory(d / ".ds.creating-bbbbbb");
  { std::FILE* f = std::fopen((d / ".ds.creating-bbbbbb/pheap.super").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("torn", f);
    std::fclose(f); }
  // Not ours to touch: another name's leftover, and a user file that merely looks similar.
  fs::create_directory(d / ".other.creating-cccccc");
  fs::create_directory(d / ".ds.creating");
  auto s = sparse_store::create(d / "ds", create_opts(engine()));
  EXPECT_TRUE(creation_leftovers(d.path(), "ds").empty());
  EXPECT_TRUE(fs::exists(d / ".other.creating-cccccc"));
  EXPECT_TRUE(fs::exists(d / ".ds.creating"));
  EXPECT_EQ(s->epoch(), 0u);
}

TEST_P(StoreCreateCrash, CreationDirectoryOfACreateInProgressIsNotRemoved) {
  temp_dir d;
  const std::string live = d / ".ds.creating-livexx";
  fs::create_directory(live);
  // A running create() holds LOCK_EX on its creation directory; so do we here.
  const int fd = ::open(live.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  sparse_store::create(d / "ds", create_opts(engine())).reset();
  EXPECT_TRUE(fs::is_directory(live));
  ::close(fd);
  fs::remove_all(d / "ds");
  sparse_store::create(d / "ds", create_opts(engine())).reset();  // lock released: cleaned
  EXPECT_FALSE(fs::exists(live));
}

TEST_P(StoreCreateCrash, ConcurrentCreatesOfOneNameYieldOneDatastoreAndAlreadyExistsForTheRest) {
  for (int round = 0; round < 5; ++round) {
    temp_dir d;
    const std::string path = d / "ds";
    const std::string name = GetParam();
    std::vector<pid_t> pids;
    int go[2];
    ASSERT_EQ(::pipe2(go, O_CLOEXEC), 0);
    for (int i = 0; i < 4; ++i) {
      const pid_t pid = ::fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        ::close(go[1]);
        char c;
        if (::read(go[0], &c, 1) != 0) ::_exit(3);  // released together when the pipe closes
        try {
          sparse_store::create(path, create_opts(make_engine(name))).reset();
          ::_exit(0);
        } catch (const error& e) {
          ::_exit(e.code() == errc::already_exists ? 10 : 11);
        }
      }
      pids.push_back(pid);
    }
    ::close(go[0]);
    ::close(go[1]);
    int won = 0, refused = 0;
    for (pid_t pid : pids) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      ASSERT_TRUE(WIFEXITED(status)) << describe(status);
      if (WEXITSTATUS(status) == 0) ++won;
      else if (WEXITSTATUS(status) == 10) ++refused;
      else ADD_FAILURE() << "child " << describe(status);
    }
    EXPECT_EQ(won, 1);
    EXPECT_EQ(refused, 3);
    EXPECT_EQ(check_state(path, false, "concurrent"), outcome::datastore);
    EXPECT_TRUE(creation_leftovers(d.path(), "ds").empty());
  }
}

TEST_P(StoreCreateCrash, CreateOnAFileOrANonEmptyDirectoryIsAlreadyExistsAndTouchesNothing) {
  temp_dir d;
  { std::FILE* f = std::fopen((d / "file").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fclose(f); }
  fs::create_directory(d / "full");
  fs::create_directory(d / "full/x");
  for (const char* n : {"file", "full"}) {
    try {
      sparse_store::create(d / n, create_opts(engine()));
      ADD_FAILURE() << n << ": no throw";
    } catch (const error& e) {
      EXPECT_EQ(e.code(), errc::already_exists) << e.what();
      EXPECT_NE(std::string(e.what()).find(d / n), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(fs::is_regular_file(d / "file"));
  EXPECT_TRUE(fs::is_directory(d / "full/x"));
  EXPECT_TRUE(creation_leftovers(d.path(), "file").empty());
  EXPECT_TRUE(creation_leftovers(d.path(), "full").empty());
  for (const char* bad : {".", "..", "/"}) {
    try {
      sparse_store::create(bad, create_opts(engine()));
      ADD_FAILURE() << bad << ": no throw";
    } catch (const error& e) {
      EXPECT_TRUE(e.code() == errc::invalid_argument || e.code() == errc::already_exists) << e.what();
    }
  }
}

TEST_P(StoreCreateCrash, CreateUnderAMissingParentIsNotFoundNamingTheDatastore) {
  temp_dir d;
  const std::string path = d / "no/such/ds";
  try {
    sparse_store::create(path, create_opts(engine()));
    ADD_FAILURE() << "no throw";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::not_found) << e.what();
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(d / "no"));
}

TEST_P(StoreCreateCrash, TrailingSlashNamesTheSameDatastore) {
  temp_dir d;
  sparse_store::create(d.path() + "/ds/", create_opts(engine())).reset();
  EXPECT_EQ(check_state(d / "ds", false, "trailing slash"), outcome::datastore);
  EXPECT_TRUE(creation_leftovers(d.path(), "ds").empty());
}

PHEAP_STORE_SUITE(StoreCreateCrash);

}  // namespace
}  // namespace pheap::test
