// store_demo [DIR] — what pheap's page store promises, shown end to end.
//
// A SparseStore keeps a large, sparse region of fixed-size pages on disk. Nothing written is
// durable until commit(): each commit is an atomic "watermark" (epoch). After any crash the
// store reopens at exactly the last completed commit — never half of one.
//
// This demo:
//   1. creates a datastore, writes pages and commits three epochs;
//   2. forks a child that reopens it, commits a fourth epoch, then keeps writing pages it
//      never commits — and is killed with SIGKILL in the middle of that;
//   3. reopens the datastore and checks, byte for byte, that it holds exactly epoch 4.
// Exit status 0 when everything checks out, 1 with a message otherwise.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "pheap/error.hpp"
#include "pheap/sparse_store.hpp"

namespace {

constexpr std::uint32_t kPage = 64 << 10;        // 64 KiB pages (the pager's default)
constexpr std::uint64_t kCapacity = 1ull << 30;  // a 1 GiB region: sparse, costs nothing unused
constexpr std::uint64_t kPagesPerEpoch = 32;

// The content of `page` as written in `epoch`: every byte derived from both, so a page that
// came back from the wrong epoch (or torn) is caught.
std::vector<std::byte> content(std::uint64_t page, std::uint64_t epoch) {
  std::vector<std::byte> buf(kPage);
  std::uint64_t x = (page + 1) * 0x9E3779B97F4A7C15ull ^ (epoch + 1) * 0xD1B54A32D192ED03ull;
  for (std::size_t i = 0; i < buf.size(); i += 8) {
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    std::memcpy(buf.data() + i, &x, 8);
  }
  return buf;
}

// Epoch e writes pages e*7 .. e*7+31 (consecutive epochs overlap, so later epochs overwrite
// some pages of earlier ones) and page 1000+e.
std::vector<std::uint64_t> pages_of(std::uint64_t epoch) {
  std::vector<std::uint64_t> v;
  for (std::uint64_t i = 0; i < kPagesPerEpoch; ++i) v.push_back(epoch * 7 + i);
  v.push_back(1000 + epoch);
  return v;
}

void write_epoch(pheap::sparse_store& s, std::uint64_t epoch) {
  std::vector<std::vector<std::byte>> images;
  std::vector<pheap::page_write> batch;
  for (std::uint64_t p : pages_of(epoch)) images.push_back(content(p, epoch));
  std::size_t i = 0;
  for (std::uint64_t p : pages_of(epoch)) batch.push_back({p, images[i++].data()});
  s.write_pages(batch);  // each page into the home the last commit does not use
}

std::vector<std::byte> root_of(std::uint64_t epoch) {
  const std::string r = "demo root record, epoch " + std::to_string(epoch);
  std::vector<std::byte> v(r.size());
  std::memcpy(v.data(), r.data(), r.size());
  return v;
}

// The child: reopen, commit epoch 4, tell the parent, then write "epoch 5" pages forever.
[[noreturn]] void child(const std::string& dir, int ack_fd) {
  try {
    auto s = pheap::sparse_store::open(dir, {});
    write_epoch(*s, 4);
    const std::uint64_t e = s->commit(root_of(4));
    (void)!::write(ack_fd, &e, sizeof e);  // acknowledged: epoch 4 is durable
    for (std::uint64_t round = 0;; ++round) {
      write_epoch(*s, 5);  // rewrites the same pages over and over; never committed
      if (round == 0) {
        const std::uint64_t writing = 0;
        (void)!::write(ack_fd, &writing, sizeof writing);
      }
    }
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "store_demo child: %s\n", ex.what());
    ::_exit(1);
  }
}

int fail(const std::string& what) {
  std::fprintf(stderr, "store_demo: FAILED: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = argc > 1 ? argv[1]
                                   : (fs::path(tmp && *tmp ? tmp : "/tmp") /
                                      ("pheap-store-demo-" + std::to_string(::getpid())))
                                         .string();
  try {
    // 1. Create and commit three epochs.
    {
      pheap::store_options opt;
      opt.capacity = kCapacity;
      opt.page_size = kPage;
      opt.segment_size = 64ull << 20;  // segment files are created on first write only
      auto s = pheap::sparse_store::create(dir, opt);
      for (std::uint64_t e = 1; e <= 3; ++e) {
        write_epoch(*s, e);
        s->commit(root_of(e));
      }
      std::printf("created %s: %llu MiB region, %u KiB pages; committed epochs 1-3\n",
                  dir.c_str(), static_cast<unsigned long long>(kCapacity >> 20), kPage >> 10);
    }  // closing without a commit would discard later writes; there are none here

    // 2. A child commits epoch 4, then dies by SIGKILL while writing uncommitted pages.
    int ack[2];
    if (::pipe(ack) != 0) return fail("pipe");
    const pid_t pid = ::fork();
    if (pid < 0) return fail("fork");
    if (pid == 0) {
      ::close(ack[0]);
      child(dir, ack[1]);
    }
    ::close(ack[1]);
    std::uint64_t committed = 0, writing = 1;
    if (::read(ack[0], &committed, sizeof committed) != sizeof committed ||
        ::read(ack[0], &writing, sizeof writing) != sizeof writing) {
      return fail("the child died before committing epoch 4");
    }
    ::usleep(20000);  // let it write uncommitted pages for a while
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ::close(ack[0]);
    if (!WIFSIGNALED(status)) return fail("the child was expected to die by SIGKILL");
    std::printf("child committed epoch %llu, then was killed with SIGKILL while writing more\n",
                static_cast<unsigned long long>(committed));

    // 3. Reopen: the last commit, as it was; the uncommitted writes are simply not named by it.
    auto s = pheap::sparse_store::open(dir, {});
    if (s->epoch() != 4) return fail("reopened at epoch " + std::to_string(s->epoch()));
    if (s->root() != root_of(4)) return fail("root record of epoch 4 not found");
    // Expected content: for each page, the last of epochs 1-4 that wrote it.
    std::uint64_t checked = 0;
    std::vector<std::byte> got(kPage);
    for (std::uint64_t p = 0; p < 1100; ++p) {
      std::uint64_t last = 0;
      for (std::uint64_t e = 1; e <= 4; ++e) {
        for (std::uint64_t q : pages_of(e)) last = q == p ? e : last;
      }
      pheap::page_read r{p, got.data()};
      s->read_pages(std::span<const pheap::page_read>(&r, 1));
      const auto want = last == 0 ? std::vector<std::byte>(kPage) : content(p, last);
      if (got != want) {
        return fail("page " + std::to_string(p) + " does not hold its epoch-" +
                    std::to_string(last) + " content");
      }
      checked += last != 0;
    }
    std::printf("reopened at epoch %llu: %llu written pages match byte for byte, the killed "
                "child's uncommitted writes are gone\n",
                static_cast<unsigned long long>(s->epoch()),
                static_cast<unsigned long long>(checked));
    std::printf("disk usage: %.1f MiB for a %llu MiB region (files stay sparse)\n",
                static_cast<double>(s->disk_bytes()) / (1 << 20),
                static_cast<unsigned long long>(kCapacity >> 20));
    s.reset();
    if (argc <= 1) fs::remove_all(dir);
    std::printf("store_demo: OK\n");
    return 0;
  } catch (const pheap::error& e) {
    return fail(e.what());
  }
}
