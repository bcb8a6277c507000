// metall/tags.hpp (pheap's Metall compatibility layer) — Metall's open-mode and instance tags,
// which are pheap's own (same names, same meaning).
#pragma once

#include <pheap/manager.hpp>

namespace metall {

using create_only_t = pheap::create_only_t;
using open_only_t = pheap::open_only_t;
using open_read_only_t = pheap::open_read_only_t;
using unique_instance_t = pheap::unique_instance_t;
using anonymous_instance_t = pheap::anonymous_instance_t;
inline constexpr create_only_t create_only{};
inline constexpr open_only_t open_only{};
inline constexpr open_read_only_t open_read_only{};
inline constexpr unique_instance_t unique_instance{};
inline constexpr anonymous_instance_t anonymous_instance{};

}  // namespace metall
