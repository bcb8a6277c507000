// Creation through the seam (issue 45): pheap::manager's create and the graph layer's
// create_datastore build the datastore in a locked creation directory and publish it only once
// its first watermark holds the heap root (and the empty graph), every byte through the
// io::engine — so the fault engine reaches them. Proven here by a crash before every I/O
// operation of each creation (the path then holds nothing or a complete datastore, and the next
// creation of the name removes the leftover), by an EIO / ENOSPC at every operation (a clear
// error naming the datastore, never its temporary name, and nothing left behind: the rollback
// of a failed create, the taking back of a datastore whose name could not be made durable), and
// by concurrent creators of one name (one wins, the others get already_exists, no one removes
// another's work).
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <pheap/graph/store.hpp>

#include "common/test_util.hpp"
#include "reliability/reliability_util.hpp"
#include "support/fault_engine.hpp"

namespace pheap::test {
namespace {

namespace fs = std::filesystem;

enum class made { heap, graph };

options small_options(made what, std::shared_ptr<io::engine> eng) {
  options o = what == made::graph ? graph::datastore_options() : options{};
  o.capacity = what == made::graph ? 64u << 20 : 4u << 20;  // the graph's banks need room
  o.page_size = 4096;
  o.engine = std::move(eng);
  return o;
}

void create(made what, const std::string& path, std::shared_ptr<io::engine> eng) {
  const options o = small_options(what, std::move(eng));
  if (what == made::heap) {
    manager m(create_only, path, o);
  } else {
    graph::create_datastore(path, o, "g", true, graph::weight_kind::none,
                            graph::persistent_graph<void>::default_banks);
  }
}

// Names in `parent` that are creation directories of `name`.
std::vector<std::string> leftovers(const std::string& parent, const std::string& name) {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(parent)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("." + name + ".creating-", 0) == 0) v.push_back(n);
  }
  return v;
}

// What `path` holds after a creation that may have been cut short: nothing (false), or a
// complete datastore (true) — a consistent heap whose watermark holds the graph for
// made::graph. Anything else is a test failure.
bool check_outcome(made what, const std::string& path, const std::string& ctx) {
  if (!fs::exists(path)) return false;
  EXPECT_TRUE(manager::consistent(path)) << ctx << ": " << path << " is not a complete heap";
  try {
    manager m(open_read_only, path);
    EXPECT_GE(m.epoch(), 1u) << ctx << ": a datastore without a heap root was published";
    if (what == made::graph) {
      EXPECT_NE(graph::find_graph_info(m, "g"), nullptr) << ctx << ": published without its graph";
    }
  } catch (const error& e) {
    ADD_FAILURE() << ctx << ": " << e.what();
  }
  return true;
}

// The next creation of the name (once the path is free) works and removes every leftover.
void check_next_creation_cleans_up(made what, const temp_dir& d, const std::string& ctx) {
  const std::string path = d / "ds";
  if (fs::exists(path)) manager::remove(path);
  EXPECT_NO_THROW(create(what, path, io::make_posix_engine())) << ctx;
  EXPECT_TRUE(leftovers(d.path(), "ds").empty()) << ctx;
  check_outcome(what, path, ctx);
}

std::uint64_t operations_of(made what) {
  temp_dir d;
  auto fe = make_fault_engine(io::make_posix_engine());
  create(what, d / "ds", fe);
  return fe->operations(op_kind::any);
}

const char* name_of(made what) { return what == made::heap ? "heap" : "graph"; }

// A crash (_exit 86, fault engine) before operation n of the creation, for every n.
void crash_sweep(made what) {
  scenario_timer t;
  const std::uint64_t ops = operations_of(what);
  ASSERT_GE(ops, 10u);
  int complete = 0, nothing = 0;
  std::uint64_t failures = 0;
  for (std::uint64_t n = 1; n <= ops + 1; ++n) {
    temp_dir d;
    const std::string path = d / "ds";
    const int status = run_in_child([&] {
      auto fe = make_fault_engine(io::make_posix_engine());
      fe->add_rule({op_kind::any, n, fault_action::crash, false});
      create(what, path, fe);
    });
    const std::string ctx = std::string(name_of(what)) + " creation, crash before operation " +
                            std::to_string(n) + " of " + std::to_string(ops);
    EXPECT_EQ(status, n <= ops ? 86 : 0) << ctx;
    const bool got = check_outcome(what, path, ctx);
    if (n > ops) {
      EXPECT_TRUE(got) << ctx << ": a completed creation left nothing";
    }
    (got ? complete : nothing)++;
    check_next_creation_cleans_up(what, d, ctx);
    if (::testing::Test::HasFailure()) {
      ++failures;
      break;
    }
  }
  // Early crashes leave nothing, crashes after the rename the complete datastore.
  EXPECT_GE(nothing, 5);
  EXPECT_GE(complete, 2);
  print_result(std::string(name_of(what)) + "_create_crash_every_op", ops + 1, failures, 0, t.seconds());
}

// EIO and ENOSPC at operation n of the creation, for every n: a thrown creation names the
// datastore (never its temporary directory) and leaves nothing; one that absorbed the error
// (a best-effort step: the leftover scan) left the complete datastore.
void error_sweep(made what) {
  scenario_timer t;
  const std::uint64_t ops = operations_of(what);
  std::uint64_t iterations = 0, failures = 0;
  int thrown = 0;
  for (std::uint64_t n = 1; n <= ops; ++n) {
    for (const auto action : {fault_action::fail_eio, fault_action::fail_enospc}) {
      ++iterations;
      temp_dir d;
      const std::string path = d / "ds";
      const std::string ctx = std::string(name_of(what)) + " creation, " +
                              (action == fault_action::fail_eio ? "EIO" : "ENOSPC") +
                              " at operation " + std::to_string(n) + " of " + std::to_string(ops);
      auto fe = make_fault_engine(io::make_posix_engine());
      fe->add_rule({op_kind::any, n, action, false});
      try {
        create(what, path, fe);
        check_outcome(what, path, ctx);
      } catch (const error& e) {
        ++thrown;
        const std::string what_s = e.what();
        EXPECT_EQ(e.code(), action == fault_action::fail_eio ? errc::io : errc::no_space) << ctx << ": " << what_s;
        // The datastore, or (heap) one of its files as it would be named once published.
        EXPECT_TRUE(e.path() == path || (what == made::heap && e.path().rfind(path + "/", 0) == 0))
            << ctx << ": " << what_s;
        EXPECT_NE(what_s.find("injected"), std::string::npos) << ctx << ": the cause is lost: " << what_s;
        EXPECT_EQ(what_s.find(".ds.creating-"), std::string::npos) << ctx << ": names the temporary: " << what_s;
        EXPECT_FALSE(fs::exists(path)) << ctx << ": a failed creation left " << path;
        EXPECT_TRUE(leftovers(d.path(), "ds").empty()) << ctx << ": a failed creation left its directory";
      }
      if (::testing::Test::HasFailure()) {
        ++failures;
        break;
      }
    }
    if (failures) break;
  }
  EXPECT_GE(thrown, static_cast<int>(ops));  // nearly every operation's failure is the creation's
  print_result(std::string(name_of(what)) + "_create_io_error_every_op", iterations, failures, 0, t.seconds());
}

TEST(CreationFaults, CrashBeforeEveryIoOperationOfAHeapCreateLeavesNothingOrACompleteHeap) {
  crash_sweep(made::heap);
}

TEST(CreationFaults, CrashBeforeEveryIoOperationOfAGraphDatastoreCreationLeavesNothingOrTheEmptyGraph) {
  crash_sweep(made::graph);
}

TEST(CreationFaults, IoErrorAtEveryOperationOfAHeapCreateRollsBackAndNamesTheDatastore) {
  error_sweep(made::heap);
}

TEST(CreationFaults, IoErrorAtEveryOperationOfAGraphDatastoreCreationLeavesNothingAndNamesTheDatastore) {
  error_sweep(made::graph);
}

// The race the fixed temporary name ".NAME.pheap-graph-creating" had: a second creator's
// remove_all deleted the first one's work. Now each creator has its own locked directory.
TEST(CreationFaults, ConcurrentGraphDatastoreCreationsOfOneNameYieldOneGraphAndAlreadyExists) {
  scenario_timer t;
  const int rounds = 5, creators = 4;
  std::uint64_t failures = 0;
  for (int round = 0; round < rounds; ++round) {
    temp_dir d;
    const std::string path = d / "ds";
    int go[2];
    ASSERT_EQ(::pipe(go), 0);
    std::vector<pid_t> pids;
    for (int i = 0; i < creators; ++i) {
      const pid_t pid = ::fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        ::close(go[1]);
        char c;
        if (::read(go[0], &c, 1) != 0) std::_Exit(3);  // all released when the pipe closes
        try {
          create(made::graph, path, io::make_posix_engine());
          std::_Exit(0);
        } catch (const error& e) {
          std::_Exit(e.code() == errc::already_exists ? 17 : 1);
        } catch (...) {
          std::_Exit(2);
        }
      }
      pids.push_back(pid);
    }
    ::close(go[0]);
    ::close(go[1]);
    int won = 0, refused = 0;
    for (const pid_t pid : pids) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      if (rc == 0) ++won;
      else if (rc == 17) ++refused;
      else ADD_FAILURE() << "round " << round << ": a creator ended with " << rc;
    }
    EXPECT_EQ(won, 1) << "round " << round;
    EXPECT_EQ(won + refused, creators) << "round " << round;
    EXPECT_TRUE(check_outcome(made::graph, path, "round " + std::to_string(round)));
    EXPECT_TRUE(leftovers(d.path(), "ds").empty()) << "round " << round;
    if (::testing::Test::HasFailure()) {
      ++failures;
      break;
    }
  }
  print_result("graph_create_concurrent_same_name", rounds, failures, 0, t.seconds());
}

}  // namespace
}  // namespace pheap::test
