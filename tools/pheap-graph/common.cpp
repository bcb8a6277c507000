// What pheap-graph's commands share (tools/pheap-graph/commands.hpp).
#include "commands.hpp"

#include <pheap/mpi/manifest.hpp>
#ifdef PHEAP_GRAPH_MPI
#include <mpi.h>
#endif

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <thread>

namespace pheap_graph {

const mpi_session* g_mpi = nullptr;

tool_support::failure describe(const std::exception& e) {
  if (dynamic_cast<const usage_error*>(&e) != nullptr) return {exit_usage, e.what()};
  return tool_support::describe_failure(
      e, "an ingestion may be running: `pheap info` shows its last watermark meanwhile");
}

#ifdef PHEAP_GRAPH_MPI
mpi_session::mpi_session() {
  if (std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr && std::getenv("PMIX_RANK") == nullptr) return;
  MPI_Init(nullptr, nullptr);
  active = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
}

mpi_session::~mpi_session() {
  if (active) MPI_Finalize();
}

void leave_after_reporter(int code) {
  std::this_thread::sleep_for(std::chrono::seconds(1));
  tool_support::leave(code);
}
#else
mpi_session::mpi_session() = default;
mpi_session::~mpi_session() = default;

void no_mpi_built_in(const std::string& ds) {
  throw usage_error(ds + " is a distributed datastore (it has " + std::string(pheap::mpi::manifest_file) +
                    "), and this pheap-graph was built without MPI: rebuild with libopenmpi-dev installed");
}
#endif

bool is_distributed(const std::string& ds) {
  std::error_code ec;
  return std::filesystem::exists(std::filesystem::path(ds) / pheap::mpi::manifest_file, ec);
}

}  // namespace pheap_graph
