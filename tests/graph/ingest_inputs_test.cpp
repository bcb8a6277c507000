// `pheap-graph ingest` at the edges of its inputs, as a pipeline meets them: a named FIFO and
// bash's <(…) (read once, never seeked; a killed job resumed by feeding the same stream
// again), an input changed between a watermark and its resume (refused, naming it, the graph
// untouched), a watermark of an older pheap-graph without a checksum, /dev/zero (a capped
// line, fast), unprintable bytes of a bad line (escaped), a truncated .gz (its real offset,
// no --skip-bad-lines hint). Every child runs under a deadline: a hang is a failure, not a
// stuck suite; waits are for events (a watermark in the superblock), never fixed sleeps.
#include <pheap/graph/edge_io.hpp>
#include <pheap/graph/store.hpp>

#include "common/test_util.hpp"
#include "compress_util.hpp"
#include "graph_reference.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace pheap::graph;
using pheap::graph::test::reference_from_edges;
using pheap::graph::test::reference_of;
using pheap::graph::test::rmat_edges;
using clock_type = std::chrono::steady_clock;

namespace {

const std::string kTool = PHEAP_GRAPH_TOOL;
constexpr auto kDeadline = std::chrono::seconds(120);  // generous: a hang, not a slow machine

struct result {
  int code = -1;  // exit code; 128 + signal; -1: still running at the deadline (killed)
  std::string output;  // stdout and stderr
};

// A child process: argv[0] is the program; stdout+stderr to `log`, stdin from `in`.
pid_t start(const std::vector<std::string>& argv, const std::string& log, const std::string& in) {
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    const int inp = ::open(in.c_str(), O_RDONLY);
    if (out < 0 || inp < 0) ::_exit(127);
    ::dup2(inp, 0);
    ::dup2(out, 1);
    ::dup2(out, 2);
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    ::execv(a[0], a.data());
    ::_exit(127);
  }
  return pid;
}

// Waits for `pid` until the deadline; kills it then (code -1).
int finish(pid_t pid) {
  const auto until = clock_type::now() + kDeadline;
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (clock_type::now() > until) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

result run(const pheap::test::temp_dir& d, std::vector<std::string> argv, const std::string& in = "/dev/null") {
  const std::string log = d / "run.log";
  std::filesystem::remove(log);
  result r;
  r.code = finish(start(argv, log, in));
  r.output = slurp(log);
  return r;
}

std::vector<std::string> ingest(const std::string& ds, std::vector<std::string> rest) {
  std::vector<std::string> a{kTool, "ingest", "--datastore", ds, "--capacity", "1G", "--quiet"};
  a.insert(a.end(), rest.begin(), rest.end());
  return a;
}

std::string text_of(const std::vector<edge>& es) {
  std::string t;
  for (const edge& e : es) t += std::to_string(e.src) + " " + std::to_string(e.dst) + "\n";
  return t;
}

void put(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

pheap::graph::test::ref_graph load(const std::string& ds) {
  pheap::manager m(pheap::open_read_only, ds);
  return visit_graph(m, "graph", [](const auto& g) { return reference_of(g); });
}

// A process writing `first` into the FIFO `path`, then — when release() is called — `rest`;
// destroyed unreleased, it exits without writing the rest (the stream just ends).
class fifo_feeder {
 public:
  fifo_feeder(const std::string& path, std::string first, std::string rest = "", bool pause = false) {
    int ctl[2];
    if (::pipe(ctl) != 0) throw std::runtime_error("pipe failed");
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      ::close(ctl[1]);
      ::signal(SIGPIPE, SIG_DFL);
      const int fd = ::open(path.c_str(), O_WRONLY);  // blocks until the reader opens it
      if (fd < 0) ::_exit(1);
      auto write_all = [fd](const std::string& s) {
        for (std::size_t off = 0; off < s.size();) {
          const ssize_t n = ::write(fd, s.data() + off, s.size() - off);
          if (n <= 0) ::_exit(2);
          off += static_cast<std::size_t>(n);
        }
      };
      write_all(first);
      char go = 0;
      if (pause && ::read(ctl[0], &go, 1) != 1) ::_exit(0);  // not released: the stream ends
      write_all(rest);
      ::_exit(0);
    }
    ::close(ctl[0]);
    ctl_ = ctl[1];
  }
  void release() {
    const char go = 'g';
    if (::write(ctl_, &go, 1) != 1) throw std::runtime_error("release failed");
  }
  ~fifo_feeder() {
    ::close(ctl_);
    ::kill(pid_, SIGKILL);  // still blocked in open() if the reader never came
    int st;
    ::waitpid(pid_, &st, 0);
  }

 private:
  pid_t pid_ = -1;
  int ctl_ = -1;
};

// The epoch of the last watermark of `ds` (the superblock; also while a writer holds it), or 0
// while it does not exist yet.
std::uint64_t epoch_of(const std::string& ds) {
  try {
    return pheap::manager::peek(ds).epoch;
  } catch (const pheap::error&) {
    return 0;
  }
}

// Waits until `ds` holds a watermark past `epoch`; false at the deadline.
bool wait_for_epoch_above(const std::string& ds, std::uint64_t epoch) {
  const auto until = clock_type::now() + kDeadline;
  while (epoch_of(ds) <= epoch) {
    if (clock_type::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// The epoch a datastore made by `pheap-graph ingest` has before its first batch: an ingestion
// of an empty input ends there.
std::uint64_t creation_epoch(const pheap::test::temp_dir& d) {
  put(d / "empty.txt", "");
  const auto r = run(d, ingest(d / "empty-ds", {d / "empty.txt"}));
  if (r.code != 0) throw std::runtime_error("empty ingestion failed: " + r.output);
  return epoch_of(d / "empty-ds");
}

bool has_raw_control_bytes(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\n' && c != '\t') || u >= 0x7f;
  });
}

}  // namespace

TEST(Ingest, AFifoInputIsReadOnceAndCompletes) {
  pheap::test::temp_dir d;
  const auto es = rmat_edges(12, 8, weight_kind::none, 5);
  const std::string fifo = d / "edges.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fifo_feeder feed(fifo, text_of(es));
  const auto r = run(d, ingest(d / "ds", {"--undirected", "--batch-size", "5000", fifo}));
  ASSERT_EQ(r.code, 0) << (r.code == -1 ? "hung (killed at the deadline): " : "") << r.output;
  EXPECT_NE(r.output.find("ingested " + std::to_string(es.size()) + " edges"), std::string::npos) << r.output;
  EXPECT_EQ(load(d / "ds"), reference_from_edges(es, false, false));
  // A stream's job is not "already ingested" by path: the next stream may hold other bytes.
  fifo_feeder again(fifo, "1 2\n");
  const auto r2 = run(d, ingest(d / "ds", {"--undirected", fifo}));
  ASSERT_EQ(r2.code, 0) << r2.output;
  auto want = es;
  want.push_back({1, 2, 0});
  EXPECT_EQ(load(d / "ds"), reference_from_edges(want, false, false));
}

TEST(Ingest, AProcessSubstitutionOfACompressedFileIsIngestedLikeTheFile) {
  pheap::test::temp_dir d;
  const auto es = rmat_edges(12, 8, weight_kind::none, 6);
  put(d / "edges.txt.gz", pheap::graph::test::gzip(text_of(es)));
  // What a user types: bash hands the tool /dev/fd/N, a pipe it cannot seek in.
  const std::string cmd = "exec '" + kTool + "' ingest --datastore '" + (d / "ds") +
                          "' --quiet <(cat '" + (d / "edges.txt.gz") + "')";
  const auto r = run(d, {"/bin/bash", "-c", cmd});
  ASSERT_EQ(r.code, 0) << (r.code == -1 ? "hung (killed at the deadline): " : "") << r.output;
  EXPECT_EQ(r.output.find("Illegal seek"), std::string::npos) << r.output;
  EXPECT_EQ(load(d / "ds"), reference_from_edges(es, true, false));
}

// A pipe cannot be read again, so a killed stream job resumes when the same bytes are fed
// again from their start: the consumed part is read, checked against the watermark's
// checksum, and skipped.
TEST(Ingest, AKilledFifoIngestionResumesWhenTheSameStreamIsFedAgainAndRefusesAnotherOne) {
  pheap::test::temp_dir d;
  const std::uint64_t created = creation_epoch(d);
  const auto es = rmat_edges(13, 8, weight_kind::none, 7);  // 65536 edges
  const std::string all = text_of(es);
  const std::size_t half = all.find('\n', all.size() / 2) + 1;
  const std::string fifo = d / "edges.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::vector<std::string> flags{"--batch-size", "1000", "--flush-every", "1000"};
  auto args = [&](const std::string& ds) {
    auto a = ingest(ds, flags);
    a.push_back(fifo);
    return a;
  };
  for (const std::string& ds : {d / "same", d / "other"}) {
    {
      // The stream stops after its first half (the feeder waits): the ingester blocks reading
      // the rest, having made watermarks of what it read. Killed there: mid-job for certain.
      fifo_feeder feed(fifo, all.substr(0, half), all.substr(half), true);
      const pid_t pid = start(args(ds), d / "killed.log", "/dev/null");
      const bool saw = wait_for_epoch_above(ds, created);
      ::kill(pid, SIGKILL);
      ASSERT_EQ(finish(pid), 128 + SIGKILL) << slurp(d / "killed.log");
      ASSERT_TRUE(saw) << "no watermark within the deadline: " << slurp(d / "killed.log");
    }
    const auto before = load(ds);
    ASSERT_FALSE(before.empty());
    if (ds == d / "same") {
      fifo_feeder feed(fifo, all);
      const auto r = run(d, args(ds));
      ASSERT_EQ(r.code, 0) << r.output;
      EXPECT_NE(r.output.find("resumed at edge"), std::string::npos) << r.output;
      EXPECT_EQ(load(ds), reference_from_edges(es, true, false)) << "exactly once across the kill";
    } else {
      auto shuffled = es;
      std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937_64(1));
      fifo_feeder feed(fifo, text_of(shuffled));
      const auto r = run(d, args(ds));
      EXPECT_EQ(r.code, 2) << r.output;
      EXPECT_NE(r.output.find(fifo), std::string::npos) << "names the input: " << r.output;
      EXPECT_NE(r.output.find("changed since its last watermark"), std::string::npos) << r.output;
      EXPECT_EQ(load(ds), before) << "a refused resume changes nothing";
    }
  }
}

// The case: same path, same size, other bytes (a shuffled copy). The unfinished job is
// made without a kill: a strict run stops at a bad line, committing what precedes it.
TEST(Ingest, AChangedInputIsRefusedAtResume) {
  pheap::test::temp_dir d;
  const auto es = rmat_edges(12, 8, weight_kind::none, 8);
  std::string t = text_of(es);
  const std::size_t cut = t.find('\n', t.size() / 2) + 1;
  t.insert(cut, "not an edge\n");
  const std::string in = d / "edges.txt";
  put(in, t);
  const auto first = run(d, ingest(d / "ds", {"--batch-size", "1000", in}));
  ASSERT_EQ(first.code, 3) << first.output;
  const auto committed = load(d / "ds");
  ASSERT_FALSE(committed.empty());

  // A shuffled copy of the same size under the same name.
  auto lines = std::vector<std::string>();
  for (std::size_t p = 0; p < t.size();) {
    const std::size_t nl = t.find('\n', p);
    lines.push_back(t.substr(p, nl + 1 - p));
    p = nl + 1;
  }
  std::shuffle(lines.begin(), lines.end(), std::mt19937_64(2));
  std::string shuffled;
  for (const auto& l : lines) shuffled += l;
  ASSERT_EQ(shuffled.size(), t.size());
  put(in, shuffled);
  const auto r = run(d, ingest(d / "ds", {"--batch-size", "1000", "--skip-bad-lines", in}));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(in), std::string::npos) << "names the input: " << r.output;
  EXPECT_NE(r.output.find("changed since its last watermark"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--abandon-incomplete"), std::string::npos) << r.output;
  EXPECT_EQ(load(d / "ds"), committed) << "nothing mixed in";

  // The input as it was: the resume is verified and completes exactly.
  put(in, t);
  const auto ok = run(d, ingest(d / "ds", {"--batch-size", "1000", "--skip-bad-lines", in}));
  ASSERT_EQ(ok.code, 0) << ok.output;
  EXPECT_EQ(ok.output.find("warning"), std::string::npos) << ok.output;
  EXPECT_EQ(load(d / "ds"), reference_from_edges(es, true, false));
}

// A graph of a pheap-graph that recorded no checksum (simulated: its input_check removed)
// still resumes; the tool says the resume could not be verified.
TEST(Ingest, AWatermarkWithoutAChecksumResumesUnverifiedAndSaysSo) {
  pheap::test::temp_dir d;
  const auto es = rmat_edges(11, 8, weight_kind::none, 9);
  std::string t = text_of(es);
  t.insert(t.find('\n', t.size() / 2) + 1, "bad line\n");
  put(d / "in.txt", t);
  ASSERT_EQ(run(d, ingest(d / "ds", {"--batch-size", "500", d / "in.txt"})).code, 3);
  {
    pheap::manager m(pheap::open_only, d / "ds");
    ASSERT_TRUE(m.destroy<input_check>(ingest_check_name("graph")));
    m.flush();
  }
  const auto r = run(d, ingest(d / "ds", {"--batch-size", "500", "--skip-bad-lines", d / "in.txt"}));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: the watermark resumed from holds no checksum"), std::string::npos) << r.output;
  EXPECT_EQ(load(d / "ds"), reference_from_edges(es, true, false));
  pheap::manager m(pheap::open_read_only, d / "ds");
  EXPECT_NE(find_input_check(m, "graph"), nullptr) << "the next read-write open records it again";
}

TEST(Ingest, DevZeroAsInputFailsFastWithALineTooLongError) {
  pheap::test::temp_dir d;
  for (const bool skip : {false, true}) {
    std::vector<std::string> a = ingest(d / (skip ? "ds-skip" : "ds"), {});
    if (skip) a.push_back("--skip-bad-lines");
    a.push_back("/dev/zero");
    const auto t0 = clock_type::now();
    const auto r = run(d, a);
    ASSERT_NE(r.code, -1) << "/dev/zero was read for " << kDeadline.count() << " s";
    EXPECT_EQ(r.code, 3) << r.output;
    EXPECT_NE(r.output.find("no newline within 1048576 bytes"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("\\x00\\x00"), std::string::npos) << "NUL bytes shown escaped: " << r.output;
    EXPECT_FALSE(has_raw_control_bytes(r.output)) << r.output;
    EXPECT_EQ(r.output.find("rerun with --skip-bad-lines"), std::string::npos) << "cannot help here: " << r.output;
    std::printf("/dev/zero%s: exit %d after %.2f s\n", skip ? " with --skip-bad-lines" : "", r.code,
                std::chrono::duration<double>(clock_type::now() - t0).count());
  }
}

TEST(Ingest, ABadLineIsEchoedWithItsBinaryAndNulBytesEscaped) {
  pheap::test::temp_dir d;
  static const char raw[] = "1 2\n3 \x01\x00\xff\x1b[2J 4\n";
  put(d / "bin.txt", std::string(raw, sizeof raw - 1));
  const auto r = run(d, ingest(d / "ds", {d / "bin.txt"}));
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_NE(r.output.find("'3 \\x01\\x00\\xff\\x1b[2J 4'"), std::string::npos) << r.output;
  EXPECT_FALSE(has_raw_control_bytes(r.output)) << r.output;
  EXPECT_NE(r.output.find("rerun with --skip-bad-lines"), std::string::npos) << "a bad line can be skipped: " << r.output;
}

TEST(Ingest, ATruncatedGzipNamesTheOffsetWhereItStopsAndDoesNotSuggestSkipping) {
  pheap::test::temp_dir d;
  const auto es = rmat_edges(4, 4, weight_kind::none, 10);  // small: the first read decodes it all
  const std::string t = text_of(es);
  const std::string gz = pheap::graph::test::gzip(t);
  put(d / "cut.gz", gz.substr(0, gz.size() - 20));  // the last bytes and the trailer lost
  const auto r = run(d, ingest(d / "ds", {d / "cut.gz"}));
  EXPECT_EQ(r.code, 3) << r.output;
  EXPECT_NE(r.output.find("truncated gzip input"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("(byte offset 0)"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("rerun with --skip-bad-lines"), std::string::npos) << r.output;
  // The complete lines before the cut are committed, and the offset named is where they end.
  const auto g = load(d / "ds");
  std::uint64_t arcs = 0;
  for (const auto& [v, l] : g) arcs += l.size();
  ASSERT_GT(arcs, 0u);
  std::size_t end = 0;
  for (std::uint64_t i = 0; i < arcs; ++i) end = t.find('\n', end) + 1;
  EXPECT_NE(r.output.find("(byte offset " + std::to_string(end) + ")"), std::string::npos) << r.output;
}

// The watermark the report prints is where the datastore ends (closing writes nothing more),
// and a rerun with nothing to do writes no watermark at all.
TEST(Ingest, TheReportedWatermarkIsWhereTheDatastoreEndsAndANothingToDoRerunWritesNone) {
  pheap::test::temp_dir d;
  put(d / "in.txt", text_of(rmat_edges(10, 4, weight_kind::none, 11)));
  const auto r = run(d, ingest(d / "ds", {"--flush-every", "1000", "--batch-size", "500", d / "in.txt"}));
  ASSERT_EQ(r.code, 0) << r.output;
  const std::uint64_t end = epoch_of(d / "ds");
  EXPECT_NE(r.output.find(", watermark " + std::to_string(end) + ","), std::string::npos)
      << "the datastore ends at " << end << ": " << r.output;
  const auto again = run(d, ingest(d / "ds", {d / "in.txt"}));
  ASSERT_EQ(again.code, 0) << again.output;
  EXPECT_NE(again.output.find("nothing to do"), std::string::npos) << again.output;
  EXPECT_NE(again.output.find("stays at watermark " + std::to_string(end)), std::string::npos) << again.output;
  EXPECT_EQ(epoch_of(d / "ds"), end) << "a rerun with nothing to do wrote a watermark";
}
