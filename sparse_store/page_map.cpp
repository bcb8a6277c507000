#include "page_map.hpp"

#include <algorithm>
#include <bit>

#include "pheap/crc32c.hpp"
#include "pheap/error.hpp"

namespace pheap::store {

struct page_map::node {
  std::unique_ptr<block_version> committed;  // null: every page without data
  std::unique_ptr<block_version> sealed;
  std::unique_ptr<block_version> working;
  // Per page: the newest version has data (may_have_data without the lock).
  std::atomic<std::uint64_t> has_data[touched_words] = {};

  const block_version* base() const { return sealed ? sealed.get() : committed.get(); }
  const block_version* newest() const { return working ? working.get() : base(); }
  void set_has_data(std::uint32_t i, bool on) {
    if (on) {
      has_data[i / 64].fetch_or(1ull << (i % 64), std::memory_order_release);
    } else {
      has_data[i / 64].fetch_and(~(1ull << (i % 64)), std::memory_order_release);
    }
  }
};

namespace {

const block_version& empty_version() {
  static const block_version v{};
  return v;
}

page_home home_in(const block_version* v, std::uint32_t i) {
  return v != nullptr ? v->home(i) : page_home::none;
}

}  // namespace

page_map::page_map(io::engine& eng, std::shared_ptr<io::file> map_file, const uuid& id,
                   std::uint64_t pages, std::vector<dir_entry> directory, std::uint64_t epoch)
    : eng_(eng),
      file_(std::move(map_file)),
      id_(id),
      layout_(pages),
      open_dir_(directory),
      nodes_(layout_.blocks),
      published_(std::make_unique<std::atomic<node*>[]>(layout_.blocks)),
      dir_(std::move(directory)),
      working_epoch_(epoch + 1) {
  for (std::uint64_t b = 0; b < layout_.blocks; ++b) published_[b].store(nullptr, std::memory_order_relaxed);
}

page_map::~page_map() = default;

page_map::node* page_map::loaded(std::uint64_t b) const {
  return published_[b].load(std::memory_order_acquire);
}

// --- loading ------------------------------------------------------------------------------------

void page_map::load_range(std::uint64_t first, std::uint64_t end) {
  std::vector<std::uint64_t> blocks;
  for (std::uint64_t b = first / pages_per_block; b * pages_per_block < end; ++b) {
    if (loaded(b) == nullptr) blocks.push_back(b);
  }
  if (!blocks.empty()) load_blocks(std::move(blocks));
}

void page_map::load_pages(std::span<const std::uint64_t> pages) {
  std::vector<std::uint64_t> blocks;
  for (std::uint64_t p : pages) {
    const std::uint64_t b = p / pages_per_block;
    if (loaded(b) == nullptr) blocks.push_back(b);
  }
  if (blocks.empty()) return;
  std::sort(blocks.begin(), blocks.end());
  blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
  load_blocks(std::move(blocks));
}

// Reads the committed copies of `blocks` that have one (one engine batch), verifies each
// against its directory entry, and publishes them. Blocks without a copy need no I/O.
void page_map::load_blocks(std::vector<std::uint64_t> blocks) {
  std::lock_guard lk(load_mu_);
  std::erase_if(blocks, [&](std::uint64_t b) { return loaded(b) != nullptr; });
  std::vector<std::uint64_t> with_copy;
  for (std::uint64_t b : blocks) {
    if (open_dir_[b].flags & dir_entry::exists) with_copy.push_back(b);
  }
  std::vector<std::byte> buf(with_copy.size() * map_block_size);
  std::vector<io::read_request> reads;
  for (std::size_t k = 0; k < with_copy.size(); ++k) {
    const dir_entry& e = open_dir_[with_copy[k]];
    reads.push_back({file_.get(), layout_.block_offset(with_copy[k], e.home()),
                     buf.data() + k * map_block_size, map_block_size});
  }
  if (!reads.empty()) {
    if (block_reader_) {
      block_reader_(reads, with_copy);
    } else {
      eng_.read(reads);
    }
  }
  std::size_t k = 0;
  for (std::uint64_t b : blocks) {
    auto n = std::make_unique<node>();
    const dir_entry& e = open_dir_[b];
    if (e.flags & dir_entry::exists) {
      auto v = std::make_unique<block_version>();
      const std::string why = check_block(buf.data() + k * map_block_size, e, b,
                                          layout_.pages_in_block(b), id_, *v);
      ++k;
      if (!why.empty()) {
        const std::uint64_t first = b * pages_per_block;
        throw error(errc::corrupt, file_->path(), "load map block",
                    "map block " + std::to_string(b) + " (pages " + std::to_string(first) + " to " +
                        std::to_string(first + layout_.pages_in_block(b) - 1) + "), copy in home " +
                        std::to_string(e.home()) + " at offset " +
                        std::to_string(layout_.block_offset(b, e.home())) + ": " + why);
      }
      for (std::uint32_t i = 0; i < pages_per_block; ++i) {
        if (v->home(i) != page_home::none) n->set_has_data(i, true);
      }
      n->committed = std::move(v);
    }
    node* raw = n.get();
    nodes_[b] = std::move(n);
    published_[b].store(raw, std::memory_order_release);
  }
}

bool page_map::may_have_data(std::uint64_t page) {
  const std::uint64_t b = page / pages_per_block;
  const std::uint32_t i = static_cast<std::uint32_t>(page % pages_per_block);
  node* n = loaded(b);
  if (n == nullptr) {
    if (open_dir_[b].data_pages == 0) return false;
    try {
      load_blocks({b});
    } catch (const std::exception&) {
      return true;  // read_pages() loads it again and reports why it cannot
    }
    n = loaded(b);
  }
  return (n->has_data[i / 64].load(std::memory_order_acquire) >> (i % 64)) & 1u;
}

std::optional<std::uint64_t> page_map::first_with_data(std::uint64_t first, std::uint64_t end) {
  for (std::uint64_t p = first; p < end;) {
    const std::uint64_t b = p / pages_per_block, block_end = std::min(end, (b + 1) * pages_per_block);
    node* n = loaded(b);
    if (n == nullptr) {
      if (open_dir_[b].data_pages == 0) {
        p = block_end;
        continue;
      }
      load_blocks({b});
      n = loaded(b);
    }
    for (; p < block_end; ++p) {
      const auto i = static_cast<std::uint32_t>(p % pages_per_block);
      if ((n->has_data[i / 64].load(std::memory_order_acquire) >> (i % 64)) & 1u) return p;
    }
  }
  return std::nullopt;
}

// --- reads ----------------------------------------------------------------------------------------

void page_map::newest(std::span<const std::uint64_t> pages, std::span<copy> out) const {
  std::shared_lock lk(mu_);
  for (std::size_t k = 0; k < pages.size(); ++k) {
    const std::uint64_t p = pages[k];
    const node* n = loaded(p / pages_per_block);
    copy c;
    if (n != nullptr) {
      const auto i = static_cast<std::uint32_t>(p % pages_per_block);
      if (const block_version* v = n->newest()) {
        c.home = v->home(i);
        c.crc = v->crc[i];
      }
      if (!damaged_.empty()) {
        if (auto d = damaged_.find(p); d != damaged_.end()) {
          c.damaged = true;
          c.alt_crc = d->second;
        }
      }
    }
    out[k] = c;
  }
}

// --- the working epoch -------------------------------------------------------------------------

page_map::node& page_map::working_node(std::uint64_t b) {
  node& n = *loaded(b);
  if (!n.working) {
    const block_version* base = n.base();
    n.working = std::make_unique<block_version>(base != nullptr ? *base : empty_version());
    n.working->touched = {};
    dirty_.push_back(b);
  }
  return n;
}

// Under mu_. True if a write of `page` must wait for the sealed epoch to be published (the
// barrier of the file comment).
bool page_map::blocked(std::uint64_t page) const {
  if (!sealed_active_) return false;
  const node& n = *loaded(page / pages_per_block);
  const auto i = static_cast<std::uint32_t>(page % pages_per_block);
  if (!n.sealed || !n.sealed->is_touched(i)) return false;
  if (n.working && n.working->is_touched(i) && n.working->home(i) != page_home::none) {
    return false;  // rewritten in place in the working epoch: it already passed
  }
  const page_home s = n.sealed->home(i);
  if (s == page_home::none) return true;  // freed: its homes are punched after the commit
  return home_in(n.committed.get(), i) == other_home(s);  // the durable epoch's copy
}

std::uint64_t page_map::begin_write(std::span<planned_write> plan,
                                    const std::function<void()>& check) {
  std::unique_lock lk(mu_);
  for (;;) {
    check();
    if (!sealing_ && std::none_of(plan.begin(), plan.end(),
                                  [&](const planned_write& w) { return blocked(w.page); })) {
      break;
    }
    cv_.wait(lk);
  }
  for (planned_write& w : plan) {
    const std::uint64_t b = w.page / pages_per_block;
    const auto i = static_cast<std::uint32_t>(w.page % pages_per_block);
    node& n = working_node(b);
    const block_version& v = *n.working;
    if (v.is_touched(i) && v.home(i) != page_home::none) {
      w.target = v.home(i);
      w.in_place = true;
      w.old_crc = v.crc[i];
    } else {
      w.target = other_home(home_in(n.base(), i));
      w.in_place = false;
    }
  }
  ++inflight_;
  return working_epoch_;
}

void page_map::end_write(std::span<const planned_write> plan, bool ok) {
  {
    std::unique_lock lk(mu_);
    for (const planned_write& w : plan) {
      const auto i = static_cast<std::uint32_t>(w.page % pages_per_block);
      node& n = *loaded(w.page / pages_per_block);
      if (ok) {
        n.working->set(i, w.target, w.crc);
        n.working->touch(i);
        n.set_has_data(i, true);
        damaged_.erase(w.page);
      } else if (w.in_place) {
        damaged_[w.page] = w.crc;
      }
    }
    --inflight_;
  }
  cv_.notify_all();
}

void page_map::discard(std::uint64_t first, std::uint64_t end) {
  std::unique_lock lk(mu_);
  cv_.wait(lk, [&] { return !sealing_; });  // lands wholly in one epoch
  for (std::uint64_t b = first / pages_per_block; b * pages_per_block < end; ++b) {
    node* n = loaded(b);
    if (n == nullptr) continue;  // never loaded: the caller loaded every block with data
    const std::uint64_t base = b * pages_per_block;
    const std::uint64_t lo = std::max(first, base) - base;
    const std::uint64_t hi = std::min(end, base + pages_per_block) - base;
    for (std::uint64_t i = lo; i < hi;) {
      // Only pages with data change: whole empty words are skipped.
      const std::uint64_t word = n->has_data[i / 64].load(std::memory_order_relaxed) >> (i % 64);
      if (word == 0) {
        i = (i / 64 + 1) * 64;
        continue;
      }
      i += static_cast<std::uint64_t>(std::countr_zero(word));
      if (i >= hi) break;
      const auto k = static_cast<std::uint32_t>(i);
      working_node(b).working->set(k, page_home::none, 0);
      n->working->touch(k);
      n->set_has_data(k, false);
      damaged_.erase(base + i);
      ++i;
    }
  }
}

void page_map::adopt(std::uint64_t page, page_home home, std::uint32_t crc) {
  std::unique_lock lk(mu_);
  const auto i = static_cast<std::uint32_t>(page % pages_per_block);
  node& n = working_node(page / pages_per_block);
  if (n.working->home(i) == home && n.working->crc[i] == crc) return;
  n.working->set(i, home, crc);
  n.working->touch(i);
  n.set_has_data(i, home != page_home::none);
}

// --- commit -----------------------------------------------------------------------------------

page_map::sealed_epoch page_map::seal() {
  sealed_epoch s;
  {
    std::unique_lock lk(mu_);
    sealing_ = true;
    cv_.wait(lk, [&] { return inflight_ == 0; });
    s.epoch = working_epoch_;
    for (std::uint64_t b : dirty_) {
      node& n = *loaded(b);
      if (n.working->any_touched()) {
        n.sealed = std::move(n.working);
        s.blocks.push_back(b);
      } else {
        n.working.reset();  // a batch that failed: nothing changed
      }
    }
    std::sort(s.blocks.begin(), s.blocks.end());
    dirty_.clear();
    ++working_epoch_;
    sealing_ = false;
    sealed_active_ = true;
  }
  cv_.notify_all();
  return s;
}

page_map::map_update page_map::encode(const sealed_epoch& s, unsigned dir_home) const {
  map_update u;
  {
    std::shared_lock lk(mu_);
    u.directory = dir_;
  }
  u.blocks.resize(s.blocks.size() * map_block_size);
  for (std::size_t k = 0; k < s.blocks.size(); ++k) {
    const std::uint64_t b = s.blocks[k];
    const block_version& v = *loaded(b)->sealed;  // immutable until publish
    dir_entry& e = u.directory[b];
    const unsigned home = (e.flags & dir_entry::exists) ? 1 - e.home() : 0;
    std::byte* out = u.blocks.data() + k * map_block_size;
    encode_map_block(out, {b, s.epoch, id_, layout_.pages_in_block(b)}, v);
    e.epoch = s.epoch;
    e.crc = crc32c(out, map_block_size);
    e.data_pages = static_cast<std::uint16_t>(v.data_pages());
    e.flags = static_cast<std::uint8_t>(dir_entry::exists | (home ? dir_entry::in_second : 0) |
                                        (v.any_second() ? dir_entry::has_second : 0));
    u.offsets.push_back(layout_.block_offset(b, home));
  }
  u.directory_bytes = encode_directory({id_, s.epoch, layout_.blocks}, u.directory);
  u.directory_length = directory_length(layout_.pages);
  u.directory_crc = crc32c(u.directory_bytes.data(), u.directory_length);
  u.directory_home = 1 - dir_home;
  return u;
}

std::vector<std::uint64_t> page_map::freed(const sealed_epoch& s) const {
  std::vector<std::uint64_t> out;
  for (std::uint64_t b : s.blocks) {
    const block_version& v = *loaded(b)->sealed;
    for (std::uint32_t i = 0; i < pages_per_block; ++i) {
      if (v.is_touched(i) && v.home(i) == page_home::none) out.push_back(b * pages_per_block + i);
    }
  }
  return out;
}

void page_map::publish(const sealed_epoch& s, const std::vector<dir_entry>& directory) {
  {
    std::unique_lock lk(mu_);
    for (std::uint64_t b : s.blocks) {
      node& n = *loaded(b);
      n.committed = std::move(n.sealed);
      dir_[b] = directory[b];
    }
    sealed_active_ = false;
  }
  cv_.notify_all();
}

void page_map::wake_all() {
  { std::unique_lock lk(mu_); }
  cv_.notify_all();
}

// --- whole-map views ----------------------------------------------------------------------------

std::vector<dir_entry> page_map::committed_directory() const {
  std::shared_lock lk(mu_);
  return dir_;
}

block_version page_map::committed_version(std::uint64_t b) const {
  std::shared_lock lk(mu_);
  const node* n = loaded(b);
  return n != nullptr && n->committed ? *n->committed : empty_version();
}

std::uint64_t page_map::live_pages() const {
  std::uint64_t total = 0;
  for (std::uint64_t b = 0; b < layout_.blocks; ++b) {
    if (const node* n = loaded(b)) {
      for (const auto& w : n->has_data) total += static_cast<std::uint64_t>(std::popcount(w.load(std::memory_order_relaxed)));
    } else {
      total += open_dir_[b].data_pages;
    }
  }
  return total;
}

void page_map::homes_in_use(std::uint64_t first, std::uint64_t end,
                            std::vector<std::uint8_t>& out) const {
  out.assign(end - first, 0);
  std::shared_lock lk(mu_);
  for (std::uint64_t p = first; p < end; ++p) {
    const node* n = loaded(p / pages_per_block);
    if (n == nullptr) continue;
    const auto i = static_cast<std::uint32_t>(p % pages_per_block);
    for (const block_version* v : {n->committed.get(), n->sealed.get(), n->working.get()}) {
      const page_home h = home_in(v, i);
      if (h != page_home::none) out[p - first] |= static_cast<std::uint8_t>(1u << home_index(h));
    }
  }
}

std::uint64_t page_map::working_epoch() const {
  std::shared_lock lk(mu_);
  return working_epoch_;
}

std::optional<std::uint64_t> page_map::sealed_now() const {
  std::shared_lock lk(mu_);
  if (!sealed_active_) return std::nullopt;
  return working_epoch_ - 1;
}

void page_map::adopt_unchanged(page_map& old) {
  std::lock_guard a(load_mu_);
  std::lock_guard b(old.load_mu_);
  for (std::uint64_t blk = 0; blk < layout_.blocks; ++blk) {
    if (old.nodes_[blk] == nullptr || !(old.open_dir_[blk] == open_dir_[blk])) continue;
    node* raw = old.nodes_[blk].get();
    nodes_[blk] = std::move(old.nodes_[blk]);
    old.published_[blk].store(nullptr, std::memory_order_relaxed);
    published_[blk].store(raw, std::memory_order_release);
  }
}

}  // namespace pheap::store
