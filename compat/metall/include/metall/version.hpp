// metall/version.hpp (pheap's Metall compatibility layer) — which Metall API this layer follows.
//
// METALL_VERSION is the Metall release whose public API the layer declares (0.30:
// MAJOR * 100000 + MINOR * 100 + PATCH, Metall's encoding), so code testing it keeps compiling.
// manager::get_version() returns the pheap library version of the datastore's last writer
// (pheap::library_version), not this number: the datastore is pheap's.
#pragma once

#define METALL_VERSION 3000
#define METALL_MAX_CAPACITY (1ULL << 47ULL)
// Defined by pheap's layer only: lets code tell the two implementations apart.
#define METALL_PHEAP_COMPAT 1

namespace metall {
using version_type = unsigned int;
}  // namespace metall
