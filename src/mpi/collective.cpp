// Agreement among ranks (collective.hpp).
#include "mpi/collective.hpp"

#include <climits>
#include <cstring>

#include "pheap/error.hpp"

namespace pheap::mpi::detail {

namespace {
struct failure_wire {
  int code;
  char text[1020];
};

failure_wire describe(std::exception_ptr e) {
  failure_wire w{};
  w.code = static_cast<int>(errc::io);
  try {
    std::rethrow_exception(e);
  } catch (const error& x) {
    w.code = static_cast<int>(x.code());
    std::strncpy(w.text, x.what(), sizeof w.text - 1);
  } catch (const std::exception& x) {
    std::strncpy(w.text, x.what(), sizeof w.text - 1);
  } catch (...) {
    std::strncpy(w.text, "unknown exception", sizeof w.text - 1);
  }
  return w;
}
}  // namespace

void agree(MPI_Comm comm, std::exception_ptr mine, const std::string& path, const std::string& op) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  int flag = mine ? rank : INT_MAX, first = INT_MAX;
  MPI_Allreduce(&flag, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == INT_MAX) return;
  failure_wire w{};
  if (rank == first) w = describe(mine);
  MPI_Bcast(&w, sizeof w, MPI_BYTE, first, comm);
  if (mine) std::rethrow_exception(mine);
  throw error(static_cast<errc>(w.code), path, op, "rank " + std::to_string(first) + " failed: " + w.text);
}

}  // namespace pheap::mpi::detail
