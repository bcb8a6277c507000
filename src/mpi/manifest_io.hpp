// src/mpi/manifest_io.hpp — the manifest's bytes and its two writes (internal; FORMAT.md).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "pheap/io.hpp"
#include "pheap/mpi/manifest.hpp"

namespace pheap::mpi::detail {

// Bytes of one slot for `ranks` ranks: the header, the entries and the checksum, rounded up
// to 4 KiB so that a slot write never shares a block with the other slot.
std::size_t slot_size(std::size_t ranks);
std::vector<std::byte> encode_slot(const manifest& m);

// The manifest's I/O goes through `eng` (the datastore's: options::engine, else
// io::default_engine()), like every durable byte of pheap (pheap/io.hpp).
//
// Creates D/pheap.manifest (must not exist) holding `m` in slot m.epoch % 2 and a zero slot,
// fdatasyncs it and fsyncs D: the file and its name are durable.
void create_manifest(io::engine& eng, const std::string& path, const manifest& m);
// Writes `m` into slot m.epoch % 2 (the slot the previous global epoch does not use) and
// fdatasyncs: the commit point of global epoch m.epoch.
void commit_manifest(io::engine& eng, const std::string& path, const manifest& m);
// Unlinks D/pheap.manifest (remove's first step).
void remove_manifest(io::engine& eng, const std::string& path);
// Readers beside a running job (FORMAT.md "Readers beside a running job"): whether the
// manifest at `path` names a global epoch above `epoch` now (false also when it cannot be
// read: the caller's own error is the one to report). A read-only open that failed at a rank
// while this holds tries the newer global epoch, up to reader_open_attempts manifests.
bool manifest_moved(const std::string& path, const std::shared_ptr<io::engine>& eng, std::uint64_t epoch);
inline constexpr int reader_open_attempts = 1000;
// The error of a read-only open (op "open read-only") or refresh (op "refresh") that found the
// manifest moving at every attempt.
[[noreturn]] void throw_outpaced(const std::string& path, std::uint64_t first, std::uint64_t last,
                                 const char* op = "open read-only");
// The engine of a datastore opened or created with `opt`.
std::shared_ptr<io::engine> engine_of(const options& opt);

uuid new_uuid();
uuid parse_uuid(const std::string& text, const std::string& path);

}  // namespace pheap::mpi::detail
