// The collective helpers of pheap/graph/mpi/algorithms.hpp.
#include <pheap/graph/mpi/algorithms.hpp>

#include <climits>
#include <numeric>

namespace pheap::graph::mpi::detail {

namespace {
// Displacements of `counts` (exclusive prefix sums); the total, checked against int.
std::vector<int> displacements(const std::vector<int>& counts, std::size_t& total) {
  std::vector<int> d(counts.size(), 0);
  std::uint64_t at = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    d[r] = static_cast<int>(at);
    at += static_cast<std::uint64_t>(counts[r]);
    if (at > INT_MAX) {
      throw error(errc::invalid_argument, "", "graph exchange", "more than 2^31 - 1 words in one exchange");
    }
  }
  total = static_cast<std::size_t>(at);
  return d;
}
}  // namespace

int ranks(MPI_Comm comm) {
  int n = 0;
  MPI_Comm_size(comm, &n);
  return n;
}

std::vector<std::uint64_t> exchange(MPI_Comm comm, std::vector<std::vector<std::uint64_t>>& out) {
  std::vector<int> send_counts(out.size()), recv_counts(out.size());
  for (std::size_t r = 0; r < out.size(); ++r) send_counts[r] = static_cast<int>(out[r].size());
  std::size_t send_total = 0, recv_total = 0;
  const std::vector<int> send_displs = displacements(send_counts, send_total);
  std::vector<std::uint64_t> send;
  send.reserve(send_total);
  for (auto& o : out) {
    send.insert(send.end(), o.begin(), o.end());
    o.clear();
  }
  MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, comm);
  const std::vector<int> recv_displs = displacements(recv_counts, recv_total);
  std::vector<std::uint64_t> got(recv_total);
  MPI_Alltoallv(send.data(), send_counts.data(), send_displs.data(), MPI_UINT64_T, got.data(), recv_counts.data(),
                recv_displs.data(), MPI_UINT64_T, comm);
  return got;
}

std::vector<std::uint64_t> gather(MPI_Comm comm, const std::vector<std::uint64_t>& words) {
  int me = 0;
  MPI_Comm_rank(comm, &me);
  const int mine = static_cast<int>(words.size());
  std::vector<int> counts(me == 0 ? static_cast<std::size_t>(ranks(comm)) : 0);
  MPI_Gather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm);
  std::size_t total = 0;
  const std::vector<int> displs = displacements(counts, total);
  std::vector<std::uint64_t> all(total);
  MPI_Gatherv(words.data(), mine, MPI_UINT64_T, all.data(), counts.data(), displs.data(), MPI_UINT64_T, 0, comm);
  return all;
}

std::uint64_t sum(MPI_Comm comm, std::uint64_t v) {
  std::uint64_t s = 0;
  MPI_Allreduce(&v, &s, 1, MPI_UINT64_T, MPI_SUM, comm);
  return s;
}

std::uint64_t max(MPI_Comm comm, std::uint64_t v) {
  std::uint64_t s = 0;
  MPI_Allreduce(&v, &s, 1, MPI_UINT64_T, MPI_MAX, comm);
  return s;
}

}  // namespace pheap::graph::mpi::detail
