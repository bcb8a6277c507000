// src/mpi/manifest_io.hpp — the manifest's bytes and its two writes (internal; FORMAT.md).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "pheap/mpi/manifest.hpp"

namespace pheap::mpi::detail {

// Bytes of one slot for `ranks` ranks: the header, the entries and the checksum, rounded up
// to 4 KiB so that a slot write never shares a block with the other slot.
std::size_t slot_size(std::size_t ranks);
std::vector<std::byte> encode_slot(const manifest& m);

// Creates D/pheap.manifest (must not exist) holding `m` in slot m.epoch % 2 and a zero slot,
// fdatasyncs it and fsyncs D: the file and its name are durable.
void create_manifest(const std::string& path, const manifest& m);
// Writes `m` into slot m.epoch % 2 (the slot the previous global epoch does not use) and
// fdatasyncs: the commit point of global epoch m.epoch.
void commit_manifest(const std::string& path, const manifest& m);

uuid new_uuid();
uuid parse_uuid(const std::string& text, const std::string& path);

}  // namespace pheap::mpi::detail
