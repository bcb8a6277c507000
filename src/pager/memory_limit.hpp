// src/pager/memory_limit.hpp — how much memory this process may use and how much of it is in
// use now, as the kernel will enforce it: the memory cgroup's limit, else a fraction of RAM.
// The pager sizes its buffer from it at construction when no buffer_size is given.
//
// Sources, in order:
//   cgroup v2  the process's cgroup (/proc/self/cgroup "0::/path" under the cgroup2 mount)
//              when it has the memory controller: limit = the smallest memory.max and
//              memory.high of it and its ancestors; usage = memory.current.
//   cgroup v1  the memory controller's hierarchy (/proc/self/cgroup "N:memory:/path"): limit =
//              min(memory.limit_in_bytes, hierarchical_memory_limit of memory.stat); usage =
//              memory.usage_in_bytes.
//   RAM        no cgroup limit below physical RAM: limit = a quarter of physical RAM; usage =
//              this process's anonymous resident memory (/proc/self/statm).
// `used` leaves out page cache that reclaim can take back without I/O (inactive_file +
// active_file − dirty − writeback of the cgroup's memory.stat): it is charged to the cgroup
// but does not make the kernel OOM-kill; dirty and writeback pages do count.
//
// Caveats: the limit is read once, when the pager opens: a limit changed later, memory the
// application allocates later, or a move to another cgroup are not followed (the headroom,
// pager.cpp choose_buffer, is what absorbs the application's growth). A cgroup v2 memory.high
// counts as a limit (the kernel throttles, rather than kills, above it).
#pragma once

#include <cstdint>
#include <string>

namespace pheap::paging {

struct memory_sample {
  std::uint64_t limit = 0;  // bytes the process (its cgroup) may use
  std::uint64_t used = 0;   // bytes in use that reclaim cannot take back without I/O
};

class memory_limit {
 public:
  enum class kind { cgroup_v2, cgroup_v1, ram };

  // The memory cgroup of this process, or RAM when none limits it.
  static memory_limit detect();

  kind source() const noexcept { return kind_; }
  // "cgroup v2 /sys/fs/cgroup/…", "cgroup v1 /sys/fs/cgroup/memory/…" or "RAM".
  std::string name() const;
  // The limit and usage now. A file that cannot be read counts as no limit / no usage.
  memory_sample sample() const;

 private:
  kind kind_ = kind::ram;
  std::string dir_;   // the cgroup's directory (cgroup sources)
  std::string root_;  // the hierarchy's mount point (v2: the ancestors' walk stops there)
  std::uint64_t ram_ = 0;
};

}  // namespace pheap::paging
