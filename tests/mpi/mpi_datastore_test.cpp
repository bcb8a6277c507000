// pheap::mpi: a datastore per rank and one global watermark (src/mpi/FORMAT.md). Jobs run
// under mpirun (tests/mpi/mpi_job.cpp); the single-process reads (open_read_only) and the
// damage run in this process.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <thread>

#include "mpi/manifest_io.hpp"
#include "mpi_runner.hpp"
#include "pheap/container.hpp"
#include "pheap/mpi/manifest.hpp"

namespace pheap::test {
namespace {

using values_t = container::vector<std::uint64_t>;
constexpr std::uint64_t kBatch = 500;

class Mpi : public ::testing::Test {
 protected:
  void SetUp() override { PHEAP_REQUIRE_MPIRUN(); }

  job_result job(int np, const std::vector<std::string>& args, const env_list& env = {}) {
    return run_mpi(np, job_, args, dir_ / ("log-" + std::to_string(++logs_)), env);
  }
  void create(int np, const std::string& d) {
    const auto r = job(np, {"create", d});
    ASSERT_EQ(r.status, 0) << r.output;
  }
  // Runs the job until `target` batches are durable; returns the global epoch every rank
  // resumed at (they must agree; mpi_job checks the data itself).
  std::uint64_t run(int np, const std::string& d, std::uint64_t target, const env_list& env = {},
                    int want_status = 0) {
    const auto r = job(np, {"run", d, std::to_string(target), std::to_string(kBatch)}, env);
    if (want_status == 0) {
      EXPECT_EQ(r.status, 0) << r.output;
    } else {
      EXPECT_NE(r.status, 0) << "the job should have died: " << r.output;
    }
    return resumed_epoch(np, r.output);
  }
  static std::uint64_t resumed_epoch(int np, const std::string& out) {
    std::map<int, std::uint64_t> at;
    const std::regex line(R"(rank (\d+) epoch (\d+) count (\d+))");
    for (std::sregex_iterator it(out.begin(), out.end(), line), end; it != end; ++it) {
      at[std::stoi((*it)[1])] = std::stoull((*it)[2]);
    }
    EXPECT_EQ(at.size(), static_cast<std::size_t>(np)) << out;
    for (auto& [r, e] : at) EXPECT_EQ(e, at.begin()->second) << "rank " << r << "\n" << out;
    return at.empty() ? 0 : at.begin()->second;
  }
  // Every rank's data read in this process: `count` batches, exact.
  static void expect_data(const std::string& d, int np, std::uint64_t epoch) {
    auto v = mpi::open_read_only(d);
    ASSERT_EQ(v.ranks.size(), static_cast<std::size_t>(np));
    EXPECT_EQ(v.man.epoch, epoch);
    for (int r = 0; r < np; ++r) {
      auto& m = v.ranks[static_cast<std::size_t>(r)];
      ASSERT_NE(m.find<std::uint64_t>("count").first, nullptr) << r;
      EXPECT_EQ(*m.find<std::uint64_t>("count").first, epoch - 1) << r;
      const values_t& vals = *m.find<values_t>("values").first;
      ASSERT_EQ(vals.size(), (epoch - 1) * kBatch) << r;
      for (std::size_t i = 0; i < vals.size(); ++i) {
        ASSERT_EQ(vals[i], r * 1000000000ull + i) << "rank " << r << " value " << i;
      }
    }
  }
  static errc open_code(const std::string& d) {
    return code_of([&] { mpi::open_read_only(d); });
  }

  temp_dir dir_;
  std::string job_ = sibling_binary("mpi_job");
  int logs_ = 0;
};

TEST_F(Mpi, FlushesUnderTwoThreeAndFourRanksReopenAtTheGlobalEpochExactly) {
  for (int np : {2, 3, 4}) {
    const std::string d = dir_ / ("d" + std::to_string(np));
    create(np, d);
    EXPECT_EQ(run(np, d, 4), 1u) << "a new datastore is global epoch 1";
    EXPECT_EQ(run(np, d, 6), 5u) << "resumed after 4 flushes";
    expect_data(d, np, 7);
    const auto ro = job(np, {"open", d, "ro"});
    EXPECT_EQ(ro.status, 0) << ro.output;
  }
}

TEST_F(Mpi, KillAtEachStepOfTheFlushReopensAtTheGlobalWatermark) {
  // FORMAT.md crash table: before the manifest the job stays at the previous global epoch,
  // from the manifest on it is at the new one — whichever rank died.
  int kills = 0;
  for (int np : {2, 3}) {
    const std::string d = dir_ / ("k" + std::to_string(np));
    create(np, d);
    std::uint64_t epoch = run(np, d, 1);  // global epoch 2
    for (const char* step : {"begin", "prepared", "committed", "confirmed"}) {
      for (int victim : {0, np - 1}) {
        const std::uint64_t doomed = epoch + 2;  // the second flush of this job
        run(np, d, 1000, {{"PHEAP_TEST_MPI_CRASH", std::string(step) + ":" + std::to_string(victim) + ":" +
                                                       std::to_string(doomed)}},
            1);
        ++kills;
        const bool committed = std::string(step) == "committed" || std::string(step) == "confirmed";
        const std::uint64_t at = run(np, d, 0);
        EXPECT_EQ(at, committed ? doomed : doomed - 1) << step << " rank " << victim << " of " << np;
        epoch = at;
      }
    }
    expect_data(d, np, epoch);
  }
  EXPECT_EQ(kills, 16);
}

TEST_F(Mpi, RandomKillsOfOneRankResumeExactlyOnce) {
  std::mt19937 rng(0x18);
  int kills = 0;
  for (int np : {2, 3, 4}) {
    const std::string d = dir_ / ("r" + std::to_string(np)), pids = dir_ / ("pids" + std::to_string(np));
    std::filesystem::create_directories(pids);
    create(np, d);
    std::uint64_t epoch = 1;
    for (int k = 0; k < 12; ++k) {
      clear_pids(pids);
      const int victim = static_cast<int>(rng() % np);
      const std::string log = dir_ / ("rlog-" + std::to_string(np) + "-" + std::to_string(k));
      const pid_t mpirun = spawn_mpi(np, job_, {"run", d, "100000", std::to_string(kBatch)}, log,
                                     {{"PHEAP_TEST_MPI_PIDS", pids}, {"PHEAP_TEST_MPI_PAUSE_US", "2000"}});
      EXPECT_TRUE(kill_rank_after(pids, victim, std::chrono::milliseconds(100 + rng() % 400)))
          << "rank " << victim << " was already gone";
      EXPECT_NE(wait_status(mpirun), 0) << slurp(log);
      ++kills;
      const std::uint64_t at = run(np, d, 0);  // checks every rank's data at the watermark
      EXPECT_GE(at, epoch) << "a global epoch was lost";
      epoch = at;
    }
    EXPECT_GT(epoch, 1u) << "no flush completed between the kills";
    expect_data(d, np, epoch);
  }
  EXPECT_EQ(kills, 36);
}

// Readers beside a running job (FORMAT.md "Readers beside a running job"): while a 2-rank job
// appends a batch and flushes every few ms, this process opens the datastore read-only again
// and again (mpi::open_read_only, as pheap-graph does) and an MPI job of 2 readers does the
// same collectively (datastore(open_read_only)). Every open lands on one global watermark
// exactly: on every rank the count is the global epoch - 1 and the values are exact, never a
// mix of a rank's newer epoch with another's older one, never an error.
TEST_F(Mpi, ReadersBesideARunningJobSeeExactlyOneGlobalWatermarkAtEachOpen) {
  const std::string d = dir_ / "live";
  create(2, d);
  EXPECT_EQ(run(2, d, 1), 1u);  // the first batch: from here on every epoch holds count and values
  const std::string wlog = dir_ / "writer-log", rlog = dir_ / "reader-log";
  const pid_t writer = spawn_mpi(2, job_, {"run", d, "300", std::to_string(kBatch)}, wlog,
                                 {{"PHEAP_TEST_MPI_PAUSE_US", "1000"}});
  const pid_t readers = spawn_mpi(2, job_, {"read", d, "60", std::to_string(kBatch)}, rlog);
  std::set<std::uint64_t> seen;
  int opens = 0, writer_status = -1;
  while (writer_status < 0) {
    int st = 0;
    const pid_t done = ::waitpid(writer, &st, WNOHANG);
    if (done == writer) writer_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    auto v = mpi::open_read_only(d);
    ++opens;
    seen.insert(v.man.epoch);
    ASSERT_EQ(v.ranks.size(), 2u);
    for (int r = 0; r < 2; ++r) {
      auto& m = v.ranks[static_cast<std::size_t>(r)];
      const auto* count = m.find<std::uint64_t>("count").first;
      const auto* vals = m.find<values_t>("values").first;
      ASSERT_TRUE(count != nullptr && vals != nullptr) << "rank " << r << " at global epoch " << v.man.epoch;
      ASSERT_EQ(*count, v.man.epoch - 1) << "rank " << r << " open " << opens;
      ASSERT_EQ(vals->size(), *count * kBatch) << "rank " << r << " open " << opens;
      for (std::size_t i = 0; i < vals->size(); ++i) {
        ASSERT_EQ((*vals)[i], r * 1000000000ull + i) << "rank " << r << " value " << i << " open " << opens;
      }
    }
  }
  EXPECT_EQ(writer_status, 0) << slurp(wlog);
  const int reader_status = wait_status(readers);
  const std::string rout = slurp(rlog);
  EXPECT_EQ(reader_status, 0) << rout;
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(rout.find("rank " + std::to_string(r) + " read 60 opens"), std::string::npos) << rout;
  }
  // Beside the writer, not after it: this process saw the watermark move many times.
  std::printf("%d opens in this process saw %zu global epochs; the MPI readers: %s\n", opens, seen.size(),
              rout.substr(0, rout.find('\n')).c_str());
  EXPECT_GE(seen.size(), 10u) << opens << " opens";
  std::smatch m;
  ASSERT_TRUE(std::regex_search(rout, m, std::regex(R"(read 60 opens (\d+) epochs)"))) << rout;
  EXPECT_GE(std::stoi(m[1]), 5) << "the MPI readers ran beside the writer: " << rout;
  expect_data(d, 2, 301);
}

// refresh(view) while a job flushes every ~1 ms of pause: each refresh moves every rank to the
// local epoch of one newer (or the same) global watermark, whole, and the last one reaches the
// job's final watermark; a view emptied by a failed refresh refuses the next.
TEST_F(Mpi, ARefreshedViewBesideARunningJobReadsExactlyOneGlobalWatermarkAfterEveryRefresh) {
  const std::string d = dir_ / "live";
  create(2, d);
  EXPECT_EQ(run(2, d, 1), 1u);
  const std::string wlog = dir_ / "writer-log";
  const pid_t writer = spawn_mpi(2, job_, {"run", d, "300", std::to_string(kBatch)}, wlog,
                                 {{"PHEAP_TEST_MPI_PAUSE_US", "1000"}});
  auto v = mpi::open_read_only(d);
  const auto expect_exact = [&](const char* when) {
    ASSERT_EQ(v.ranks.size(), 2u) << when;
    for (int r = 0; r < 2; ++r) {
      auto& m = v.ranks[static_cast<std::size_t>(r)];
      ASSERT_EQ(m.epoch(), v.man.ranks[static_cast<std::size_t>(r)].epoch) << when << ", rank " << r;
      const auto* count = m.find<std::uint64_t>("count").first;
      const auto* vals = m.find<values_t>("values").first;
      ASSERT_TRUE(count != nullptr && vals != nullptr) << when << ", rank " << r << " at global epoch " << v.man.epoch;
      ASSERT_EQ(*count, v.man.epoch - 1) << when << ", rank " << r;
      ASSERT_EQ(vals->size(), *count * kBatch) << when << ", rank " << r;
      for (std::size_t i = 0; i < vals->size(); ++i) {
        ASSERT_EQ((*vals)[i], r * 1000000000ull + i) << when << ", rank " << r << " value " << i;
      }
    }
  };
  expect_exact("at the open");
  std::set<std::uint64_t> seen{v.man.epoch};
  int refreshes = 0, writer_status = -1;
  while (writer_status < 0) {
    int st = 0;
    if (::waitpid(writer, &st, WNOHANG) == writer) writer_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    const std::uint64_t before = v.man.epoch;
    const std::uint64_t g = mpi::refresh(v);
    ++refreshes;
    ASSERT_EQ(g, v.man.epoch);
    ASSERT_GE(g, before) << "a refresh never moves back";
    seen.insert(g);
    expect_exact(("refresh " + std::to_string(refreshes)).c_str());
    if (HasFatalFailure()) return;
  }
  EXPECT_EQ(writer_status, 0) << slurp(wlog);
  EXPECT_EQ(mpi::refresh(v), 301u);  // the job's last watermark
  expect_exact("after the job");
  std::printf("%d refreshes beside the job saw %zu global epochs\n", refreshes, seen.size());
  EXPECT_GE(seen.size(), 10u) << refreshes << " refreshes";
  EXPECT_GT(v.ranks[0].stats().pager.refreshes, 0u);
  mpi::distributed_view empty;
  empty.path = d;
  try {
    mpi::refresh(empty);
    ADD_FAILURE() << "refresh of a view without ranks";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("open the distributed datastore again"), std::string::npos) << e.what();
  }
}

TEST_F(Mpi, OpenWithAnotherRankCountFailsOnEveryRankNamingBoth) {
  const std::string d = dir_ / "d";
  create(2, d);
  const auto r = job(3, {"open", d});
  EXPECT_NE(r.status, 0);
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_NE(r.output.find("rank " + std::to_string(rank) + " error invalid argument"), std::string::npos)
        << r.output;
  }
  EXPECT_NE(r.output.find("created with 2 ranks, opened by a job of 3"), std::string::npos) << r.output;
}

TEST_F(Mpi, TornManifestIsCorruptAndOneTornSlotFallsBackToTheOther) {
  const std::string d = dir_ / "d", file = d + "/" + mpi::manifest_file;
  create(2, d);
  run(2, d, 1);  // global epoch 2 in slot 0; epoch 1 still in slot 1
  const auto size = std::filesystem::file_size(file);
  auto scribble = [&](std::uint64_t at) {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(at));
    f.write("torn", 4);
  };
  scribble(size / 2 + 20);  // slot 1 (epoch 1, the older): the newer stays
  EXPECT_EQ(mpi::read_manifest(d).epoch, 2u);
  expect_data(d, 2, 2);
  scribble(20);  // slot 0 too
  EXPECT_EQ(open_code(d), errc::corrupt);
  try {
    mpi::read_manifest(d);
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("both slots are damaged"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
  }
  const auto r = job(2, {"open", d});
  EXPECT_NE(r.output.find("rank 1 error corrupt"), std::string::npos) << r.output;
}

TEST_F(Mpi, TornManifestWriteOfTheNextEpochLeavesTheJobAtThePreviousOne) {
  // Crash table, "manifest being written (torn)": every rank prepared G+1, rank 0 died
  // while writing slot (G+1) % 2. The torn slot fails its checksum; the job reopens at G and
  // the prepared epochs are discarded.
  const std::string d = dir_ / "d", file = d + "/" + mpi::manifest_file;
  create(2, d);
  const std::uint64_t g = run(2, d, 2) + 2;  // global epoch 3
  run(2, d, 1000, {{"PHEAP_TEST_MPI_CRASH", "prepared:0:" + std::to_string(g + 1)}}, 1);
  mpi::manifest next = mpi::read_manifest(d);
  ASSERT_EQ(next.epoch, g);
  next.epoch = g + 1;
  for (auto& r : next.ranks) ++r.epoch;
  const std::vector<std::byte> slot = mpi::detail::encode_slot(next);
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(((g + 1) % 2) * slot.size()));
    f.write(reinterpret_cast<const char*>(slot.data()), 100);  // the first 100 bytes landed
  }
  EXPECT_EQ(mpi::read_manifest(d).epoch, g);
  EXPECT_EQ(run(2, d, 0), g) << "every rank reopens at the last committed global epoch";
  expect_data(d, 2, g);
}

// The manifest's I/O goes through the datastore's engine (issue 45): an EIO at every sync of
// rank 0 during one flush — its datastore's prepare and confirm, and the manifest's fdatasync,
// the commit point — and at rank 0's last writes (the manifest slot, the confirm's superblock).
// The flush throws on every rank (or, at the confirm, reports the epoch committed), and the
// job reopens at G or, when the manifest slot was written and only its sync failed, at G+1 —
// every rank at the same one, its data exact; never below G.
TEST_F(Mpi, IoErrorAtEachSyncAndManifestWriteOfAFlushLeavesTheLastGlobalWatermarkIntact) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string d = dir_ / "f";
  create(2, d);
  std::uint64_t g = run(2, d, 1) + 1;  // global epoch 2
  // Calibration: a clean flush's operations on rank 0 (from its open on).
  const env_list fault = {{"PHEAP_TEST_MPI_FAULT_RANK0", "1"}};
  const auto clean = job(2, {"run", d, std::to_string(g), std::to_string(kBatch)}, fault);
  ASSERT_EQ(clean.status, 0) << clean.output;
  ++g;
  const std::regex ops(R"(rank 0 operations sync (\d+) write (\d+))");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(clean.output, m, ops)) << clean.output;
  const std::uint64_t syncs = std::stoull(m[1]), writes = std::stoull(m[2]);
  ASSERT_GE(syncs, 3u);
  std::vector<std::string> rules;
  for (std::uint64_t n = 1; n <= syncs; ++n) rules.push_back("sync:" + std::to_string(n));
  for (std::uint64_t n = writes > 3 ? writes - 2 : 1; n <= writes; ++n) rules.push_back("write:" + std::to_string(n));
  int failed = 0, failures = 0;
  for (const std::string& rule : rules) {
    env_list env = fault;
    env.push_back({"PHEAP_FAULT_EIO_AT", rule});
    const auto r = job(2, {"run", d, std::to_string(g), std::to_string(kBatch)}, env);
    if (r.status != 0) {
      ++failed;
      EXPECT_NE(r.output.find("injected"), std::string::npos) << rule << ": the cause is lost\n" << r.output;
    }
    const std::uint64_t at = run(2, d, 0);  // mpi_job checks every rank's data against its epoch
    EXPECT_TRUE(at == g || at == g + 1) << rule << ": reopened at " << at << ", last committed " << g;
    if (!::testing::Test::HasFailure()) expect_data(d, 2, at);
    if (::testing::Test::HasFailure()) {
      ++failures;
      break;
    }
    g = at;  // the last committed global epoch; the next job's one flush makes g + 1
  }
  EXPECT_GE(failed, static_cast<int>(syncs) - 1);  // nearly every injected error is the flush's
  std::printf("PHEAP_RESULT scenario=mpi_manifest_io_error_during_flush iterations=%zu failures=%d "
              "data_lost=0 seconds=%.1f\n",
              rules.size(), failures,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

TEST_F(Mpi, ForeignManifestIsNotADatastore) {
  const std::string d = dir_ / "d";
  create(2, d);
  std::ofstream(d + "/" + mpi::manifest_file, std::ios::trunc) << std::string(8192, 'x');
  EXPECT_EQ(open_code(d), errc::not_a_datastore);
}

TEST_F(Mpi, DirectoryWithoutManifestOrWithAnUnwrittenOneIsNotFound) {
  const std::string d = dir_ / "d";
  create(2, d);
  std::filesystem::remove(d + "/" + mpi::manifest_file);  // as after a creation cut short
  EXPECT_EQ(open_code(d), errc::not_found);
  std::ofstream(d + "/" + mpi::manifest_file) << std::string(8192, '\0');  // made, never written
  EXPECT_EQ(open_code(d), errc::not_found);
  EXPECT_EQ(open_code(dir_ / "nothing"), errc::not_found);
}

TEST_F(Mpi, MissingRankDirectoryIsNotFoundNamingIt) {
  const std::string d = dir_ / "d";
  create(3, d);
  std::filesystem::remove_all(mpi::rank_dir(d, 2));
  try {
    mpi::open_read_only(d);
    ADD_FAILURE() << "opened without rank 2";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::not_found) << e.what();
    EXPECT_NE(std::string(e.what()).find("rank-00002"), std::string::npos) << e.what();
  }
  const auto r = job(3, {"open", d});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("rank 0 error not found"), std::string::npos) << "every rank fails: " << r.output;
}

TEST_F(Mpi, RankDirectoryOfAnotherJobIsRefusedNamingBothUuids) {
  const std::string a = dir_ / "a", b = dir_ / "b";
  create(2, a);
  create(2, b);
  std::filesystem::remove_all(mpi::rank_dir(a, 1));
  std::filesystem::rename(mpi::rank_dir(b, 1), mpi::rank_dir(a, 1));
  try {
    mpi::open_read_only(a);
    ADD_FAILURE() << "opened with another job's rank 1";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::not_a_datastore) << e.what();
    EXPECT_NE(std::string(e.what()).find("another job"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(to_string(mpi::read_manifest(a).ranks[1].id)), std::string::npos)
        << e.what();
  }
}

TEST_F(Mpi, SnapshotHoldsTheGlobalEpochUnderANewJobUuid) {
  const std::string d = dir_ / "d", s = dir_ / "s";
  create(2, d);
  run(2, d, 2);
  const auto r = job(2, {"snapshot", d, s, std::to_string(kBatch)});
  ASSERT_EQ(r.status, 0) << r.output;
  const mpi::manifest md = mpi::read_manifest(d), ms = mpi::read_manifest(s);
  EXPECT_EQ(ms.epoch, md.epoch);
  EXPECT_NE(ms.job, md.job);
  for (int rank = 0; rank < 2; ++rank) EXPECT_NE(ms.ranks[rank].id, md.ranks[rank].id) << rank;
  auto v = mpi::open_read_only(s);
  EXPECT_EQ(*v.ranks[1].find<std::uint64_t>("count").first, md.epoch - 1);
  EXPECT_EQ(v.ranks[1].find<values_t>("values").first->size(), (md.epoch - 1) * kBatch);
}

TEST_F(Mpi, RemoveDeletesTheManifestAndEveryRank) {
  const std::string d = dir_ / "d";
  create(3, d);
  const auto r = job(2, {"remove", d});  // any job size
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_FALSE(std::filesystem::exists(d));
}

TEST(MpiManifest, SlotSizeCoversTheEntriesIn4KiBUnits) {
  EXPECT_EQ(mpi::detail::slot_size(1), 4096u);
  EXPECT_EQ(mpi::detail::slot_size(167), 4096u);   // 64 + 24 * 167 + 4 = 4076
  EXPECT_EQ(mpi::detail::slot_size(168), 8192u);
  EXPECT_EQ(mpi::detail::slot_size(1000), 24576u);  // 64 + 24000 + 4 = 24068
}

}  // namespace
}  // namespace pheap::test
