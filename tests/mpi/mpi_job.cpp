// The MPI job the mpi tests run under mpirun (tests/mpi/mpi_test.cpp):
//
//   mpi_job create D            create the distributed datastore D
//   mpi_job run D T B           open D; check that every rank resumed at the same point, the
//                               one the global epoch names, with its data exact; then append
//                               B values per rank and flush, until T flushes are in the data
//   mpi_job open D [ro]         open D (read-write or read-only) and report its global epoch
//   mpi_job snapshot D S B      open D, append one batch of B, snapshot to S
//   mpi_job read D N B          open D read-only N times (beside a running `run`, say), each
//                               time checking every rank's data against the global epoch as
//                               `run` does; prints "rank R read N opens E epochs" at the end
//   mpi_job remove D            remove D
//
// Rank r's values are r * 1e9 + i for i = 0, 1, ...; its heap holds them in "values" and the
// number of completed batches in "count". Since creation is global epoch 1 and each batch is
// one flush, count == global epoch - 1 on every rank, always.
//
// Test hooks: PHEAP_TEST_MPI_CRASH and PHEAP_TEST_MPI_PIDS (crash_hooks.hpp);
// PHEAP_TEST_MPI_PAUSE_US sleeps that long before each batch; PHEAP_TEST_MPI_FAULT_RANK0=1
// gives rank 0 (its datastore and the manifest) a fault engine (tests/support/fault_engine.hpp)
// whose rules come from PHEAP_FAULT_EIO_AT & co., and makes rank 0 print
// "rank 0 operations sync S write W" before it leaves.
//
// Output: one line per rank "rank R epoch G count C" after the open; errors as
// "rank R error CODE: what" with exit status 3; a failed check exits 4.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "crash_hooks.hpp"
#include "support/fault_engine.hpp"
#include "pheap/container.hpp"
#include "pheap/mpi/datastore.hpp"

namespace {

using values_t = pheap::container::vector<std::uint64_t>;

constexpr std::uint64_t rank_base = 1000000000ull;

std::shared_ptr<pheap::test::fault_engine> g_fault;  // rank 0's, with PHEAP_TEST_MPI_FAULT_RANK0

pheap::options small() {
  pheap::options o;
  o.engine = g_fault;
  o.capacity = 256ull << 20;
  o.page_size = 64 * 1024;
  o.segment_size = 64ull << 20;
  o.pager.buffer_size = 32ull << 20;
  return o;
}

[[noreturn]] void check_failed(int rank, const std::string& what) {
  std::fprintf(stderr, "rank %d check failed: %s\n", rank, what.c_str());
  std::fflush(nullptr);
  MPI_Abort(MPI_COMM_WORLD, 4);
  std::abort();
}

// Checks that this rank's data is exactly `count` batches of B and that every rank agrees on
// the count, which the global epoch names. Prints the resume line.
std::uint64_t check_resumed(pheap::mpi::datastore& ds, std::uint64_t batch) {
  auto& m = ds.local();
  auto* count = m.find_or_construct<std::uint64_t>("count")(0);
  auto* values = m.find_or_construct<values_t>("values")(m.get_allocator<>());
  const int r = ds.rank();
  if (*count != ds.epoch() - 1) {
    check_failed(r, "count " + std::to_string(*count) + " at global epoch " + std::to_string(ds.epoch()));
  }
  if (values->size() != *count * batch) {
    check_failed(r, std::to_string(values->size()) + " values for count " + std::to_string(*count));
  }
  for (std::uint64_t i = 0; i < values->size(); ++i) {
    if ((*values)[i] != r * rank_base + i) check_failed(r, "value " + std::to_string(i));
  }
  std::uint64_t lo = 0, hi = 0;
  MPI_Allreduce(count, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(count, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  if (lo != hi) check_failed(r, "ranks resumed at different counts " + std::to_string(lo) + ".." + std::to_string(hi));
  std::printf("rank %d epoch %llu count %llu\n", r, static_cast<unsigned long long>(ds.epoch()),
              static_cast<unsigned long long>(*count));
  std::fflush(stdout);
  return *count;
}

// check_resumed of a read-only open: the same checks, nothing constructed.
std::uint64_t check_read(pheap::mpi::datastore& ds, std::uint64_t batch) {
  auto& m = ds.local();
  const int r = ds.rank();
  auto* count = m.find<std::uint64_t>("count").first;
  auto* values = m.find<values_t>("values").first;
  if (count == nullptr || values == nullptr) check_failed(r, "no count or values at global epoch " + std::to_string(ds.epoch()));
  if (*count != ds.epoch() - 1) {
    check_failed(r, "read count " + std::to_string(*count) + " at global epoch " + std::to_string(ds.epoch()));
  }
  if (values->size() != *count * batch) {
    check_failed(r, "read " + std::to_string(values->size()) + " values for count " + std::to_string(*count));
  }
  for (std::uint64_t i = 0; i < values->size(); ++i) {
    if ((*values)[i] != r * rank_base + i) check_failed(r, "read value " + std::to_string(i));
  }
  std::uint64_t lo = 0, hi = 0;
  MPI_Allreduce(count, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(count, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  if (lo != hi) check_failed(r, "ranks read different counts " + std::to_string(lo) + ".." + std::to_string(hi));
  return *count;
}

void append_batch(pheap::mpi::datastore& ds, std::uint64_t batch) {
  auto& m = ds.local();
  auto* count = m.find<std::uint64_t>("count").first;
  auto* values = m.find<values_t>("values").first;
  for (std::uint64_t i = 0; i < batch; ++i) values->push_back(ds.rank() * rank_base + values->size());
  ++*count;
}

int run(int argc, char** argv, int rank) {
  const std::string cmd = argv[1], d = argv[2];
  if (cmd == "create") {
    pheap::mpi::datastore ds(pheap::create_only, MPI_COMM_WORLD, d, small());
    return 0;
  }
  if (cmd == "open") {
    const bool ro = argc > 3 && std::string(argv[3]) == "ro";
    if (ro) {
      pheap::mpi::datastore ds(pheap::open_read_only, MPI_COMM_WORLD, d, small());
      std::printf("rank %d epoch %llu\n", rank, static_cast<unsigned long long>(ds.epoch()));
    } else {
      pheap::mpi::datastore ds(pheap::open_only, MPI_COMM_WORLD, d, small());
      std::printf("rank %d epoch %llu\n", rank, static_cast<unsigned long long>(ds.epoch()));
    }
    return 0;
  }
  if (cmd == "run") {
    const std::uint64_t target = std::stoull(argv[3]), batch = std::stoull(argv[4]);
    const char* pause = std::getenv("PHEAP_TEST_MPI_PAUSE_US");
    const long pause_us = pause ? std::atol(pause) : 0;
    pheap::mpi::datastore ds(pheap::open_only, MPI_COMM_WORLD, d, small());
    for (std::uint64_t c = check_resumed(ds, batch); c < target; ++c) {
      if (pause_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(pause_us));
      append_batch(ds, batch);
      ds.flush();
    }
    return 0;
  }
  if (cmd == "snapshot") {
    pheap::mpi::datastore ds(pheap::open_only, MPI_COMM_WORLD, d, small());
    const std::uint64_t batch = std::stoull(argv[4]);
    check_resumed(ds, batch);
    append_batch(ds, batch);
    ds.snapshot(argv[3]);
    return 0;
  }
  if (cmd == "read") {
    const std::uint64_t opens = std::stoull(argv[3]), batch = std::stoull(argv[4]);
    std::uint64_t last = 0, epochs = 0;
    for (std::uint64_t i = 0; i < opens; ++i) {
      pheap::mpi::datastore ds(pheap::open_read_only, MPI_COMM_WORLD, d, small());
      check_read(ds, batch);
      if (ds.epoch() != last) ++epochs;
      last = ds.epoch();
    }
    std::printf("rank %d read %llu opens %llu epochs\n", rank, static_cast<unsigned long long>(opens),
                static_cast<unsigned long long>(epochs));
    return 0;
  }
  if (cmd == "remove") {
    pheap::mpi::datastore::remove(MPI_COMM_WORLD, d);
    return 0;
  }
  std::fprintf(stderr, "unknown command %s\n", cmd.c_str());
  return 2;
}

}  // namespace

// ASan builds: Open MPI's components leak at MPI_Finalize and are dlclose()d before
// LeakSanitizer reports, so the reports carry no symbol a suppression could name. Leak
// checking stays on for the library's own code in-process: tests/heap/two_phase_test.cpp,
// tests/pager/pager_two_phase_test.cpp and mpi_datastore_test's single-process reads.
extern "C" __attribute__((used)) const char* __asan_default_options() { return "detect_leaks=0"; }

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  pheap::test::mpi_hooks::install(rank);
  int rc = 2;
  if (rank == 0 && std::getenv("PHEAP_TEST_MPI_FAULT_RANK0") != nullptr) {
    g_fault = pheap::test::make_fault_engine(pheap::io::default_engine());
  }
  if (argc >= 3) {
    try {
      rc = run(argc, argv, rank);
    } catch (const pheap::error& e) {
      std::fprintf(stderr, "rank %d error %s: %s\n", rank, pheap::to_string(e.code()), e.what());
      rc = 3;
    }
  }
  if (g_fault) {
    std::printf("rank 0 operations sync %llu write %llu\n",
                static_cast<unsigned long long>(g_fault->operations(pheap::test::op_kind::sync)),
                static_cast<unsigned long long>(g_fault->operations(pheap::test::op_kind::write)));
  }
  std::fflush(nullptr);
  MPI_Finalize();
  return rc;
}
