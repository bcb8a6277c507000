// The pager's self-check for a quiescent pager (debug builds run it at teardown; white-box
// tests call it): the page table against the page tables of the region (PAGEMAP_SCAN) and
// against the budget's counters — invariants I1, I2, I6, the state part of I7, I8, I9 and I10
// of page_table.hpp — and the eviction staging range's frames against their bound.
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "pager/pager_impl.hpp"

namespace pheap::paging {

std::string pager_impl::check_invariants() const {
  // A fill's UFFDIO_COPY wakes the faulting thread before its worker records the page
  // resident, so the application can return from its last access while a worker still holds
  // `filling` for a moment. Quiescence includes those fills finishing: wait for them (bounded;
  // a fill still pending after that is reported below as the bug it then is).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (std::size_t p = 0; p < core_.npages;) {
    if (ps::kind(core_.table.load(p)) != ps::filling || std::chrono::steady_clock::now() > deadline) {
      ++p;
      continue;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::int64_t occupied = 0, pinned = 0;
  std::vector<std::uint8_t> present(core_.npages, 0);
  const bool have_present =
      core_.pagemap_fd >= 0 &&
      pagemap_walk<256>(core_.pagemap_fd, core_.base, core_.base + core_.cap, 0, page_is_present, 0,
                        [&](const page_region& reg) {
                          for (std::uint64_t x = reg.start; x < reg.end; x += os_page_size()) {
                            present[(x - reinterpret_cast<std::uintptr_t>(core_.base)) / core_.ps] = 1;
                          }
                        }) >= 0;
  for (std::size_t p = 0; p < core_.npages; ++p) {
    const std::uint32_t s = core_.table.load(p);
    const std::uint32_t k = ps::kind(s);
    auto bad = [&](const char* what) {
      char b[160];
      std::snprintf(b, sizeof b, "page %zu state 0x%x: %s", p, s, what);
      return std::string(b);
    };
    if (k == ps::filling) return bad("filling while quiescent");
    if (s & (ps::owned | ps::wanted)) return bad("owned/wanted while quiescent (I2)");
    if (s & ps::writing) return bad("writing while quiescent (I8)");
    if (k != ps::resident && (s & ps::dirty)) return bad("dirty but not resident");
    if (k != ps::absent && (s & ps::kept)) return bad("kept but not absent (I7)");
    if ((s & ps::kept) && !core_.victims.is_open()) return bad("kept without a victim cache (I7)");
    if (k != ps::resident && ps::turns(s) > 0) return bad("turns of the hand but not resident (I9)");
    if (k == ps::resident) ++occupied;
    if (ps::pins(s) > 0) ++pinned;
    if (have_present) {
      // ZEROPAGE-filled read-only pages are present too (zero-page ptes).
      if (k == ps::resident && !present[p]) return bad("resident but not mapped (I1)");
      if (k == ps::absent && present[p]) return bad("absent but mapped (I1)");
    }
  }
  if (occupied != core_.budget.occupied()) {
    return "occupied counter " + std::to_string(core_.budget.occupied()) + " != resident pages " +
           std::to_string(occupied) + " (I6)";
  }
  if (core_.ro_wp && core_.pagemap_fd >= 0) {
    // I10: nothing present in a read-only region is writable (PAGEMAP_SCAN's "written" is a
    // present frame without the write-protect bit).
    const long long writable = pagemap_bytes(core_.pagemap_fd, core_.base, core_.base + core_.cap,
                                             page_is_present | page_is_written);
    if (writable != 0) {
      return std::to_string(writable) + " bytes of the read-only region are mapped without write-protection (I10)";
    }
  }
  if (pinned != core_.budget.pinned()) {
    return "pinned counter " + std::to_string(core_.budget.pinned()) + " != pinned pages " +
           std::to_string(pinned);
  }
  return evictor_.check_invariants();
}

}  // namespace pheap::paging
