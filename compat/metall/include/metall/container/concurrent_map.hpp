// metall/container/concurrent_map.hpp (pheap's Metall compatibility layer) — Metall's
// concurrent_map: a map that threads may insert into and edit at the same time, storable in a
// persistent heap.
//
// Banks keys over NumBanks ordered maps (bank = BankHasher(key) % NumBanks); each bank is
// guarded by one of NumBanks process-wide striped mutexes (metall/utility/mutex.hpp), never
// by a mutex stored in the heap (its state would persist across a reopen).
//
//   insert(value)          inserts if the key is absent; true if it did
//   scoped_edit(key)       {mapped value, lock of its bank}: edit while the lock is held
//                          (the key is inserted default-constructed if absent)
//   edit(key, f)           f(mapped value) under the bank's lock (same insertion rule)
//   count, find, size, cbegin/cend (iteration is not synchronised with writers)
//
// Caveats: the mutexes are shared by every concurrent_map of the process with the same NumBanks
// (as Metall's); find() and iteration take no lock; size() is exact once writers are done.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <utility>

#include <boost/container/map.hpp>
#include <boost/container/scoped_allocator.hpp>
#include <boost/container/vector.hpp>

#include <metall/utility/mutex.hpp>

namespace metall::container {

template <class Key, class T, class Compare = std::less<Key>, class BankHasher = std::hash<Key>,
          class Allocator = std::allocator<std::pair<const Key, T>>, int NumBanks = 1024>
class concurrent_map {
  static_assert(NumBanks > 0, "concurrent_map needs at least one bank");
  template <class U>
  using rebind = typename std::allocator_traits<Allocator>::template rebind_alloc<U>;
  using bank_type = boost::container::map<Key, T, Compare, rebind<std::pair<const Key, T>>>;
  using banks_type = boost::container::vector<bank_type, boost::container::scoped_allocator_adaptor<rebind<bank_type>>>;

 public:
  using key_type = Key;
  using mapped_type = T;
  using value_type = std::pair<const Key, T>;
  using size_type = std::size_t;
  using allocator_type = Allocator;

  // Walks the banks in order, each bank in key order.
  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = concurrent_map::value_type;
    using difference_type = std::ptrdiff_t;
    using pointer = const value_type*;
    using reference = const value_type&;

    const_iterator() = default;
    reference operator*() const { return *inner_; }
    pointer operator->() const { return &*inner_; }
    const_iterator& operator++() {
      ++inner_;
      settle();
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator t = *this;
      ++*this;
      return t;
    }
    bool operator==(const const_iterator& o) const {
      return bank_ == o.bank_ && (bank_ == last_ || inner_ == o.inner_);
    }

   private:
    friend class concurrent_map;
    using outer = typename banks_type::const_iterator;
    using inner = typename bank_type::const_iterator;
    const_iterator(outer bank, outer last) : bank_(bank), last_(last) {
      if (bank_ != last_) inner_ = bank_->begin();
      settle();
    }
    const_iterator(outer bank, outer last, inner at) : bank_(bank), last_(last), inner_(at) {}
    // Moves past exhausted banks.
    void settle() {
      while (bank_ != last_ && inner_ == bank_->end()) {
        if (++bank_ != last_) inner_ = bank_->begin();
      }
    }
    outer bank_{}, last_{};
    inner inner_{};
  };

  explicit concurrent_map(const Allocator& alloc = Allocator()) : banks_(NumBanks, alloc) {}

  size_type count(const key_type& key) const { return banks_[bank_of(key)].count(key); }
  size_type size() const noexcept { return size_.load(std::memory_order_acquire); }

  bool insert(const value_type& value) { return emplace_locked(value); }
  bool insert(value_type&& value) { return emplace_locked(std::move(value)); }

  std::pair<mapped_type&, std::unique_lock<std::mutex>> scoped_edit(const key_type& key) {
    auto lock = utility::mutex::mutex_lock<NumBanks>(bank_of(key));
    mapped_type& v = slot(key);
    return {v, std::move(lock)};
  }
  void edit(const key_type& key, const std::function<void(mapped_type&)>& editor) {
    auto lock = utility::mutex::mutex_lock<NumBanks>(bank_of(key));
    editor(slot(key));
  }

  const_iterator cbegin() const { return const_iterator(banks_.cbegin(), banks_.cend()); }
  const_iterator cend() const { return const_iterator(banks_.cend(), banks_.cend()); }
  const_iterator begin() const { return cbegin(); }
  const_iterator end() const { return cend(); }
  const_iterator find(const key_type& key) const {
    const std::size_t b = bank_of(key);
    const auto it = banks_[b].find(key);
    if (it == banks_[b].end()) return cend();
    return const_iterator(banks_.cbegin() + static_cast<std::ptrdiff_t>(b), banks_.cend(), it);
  }

  allocator_type get_allocator() const { return allocator_type(banks_.get_allocator()); }

 private:
  static std::size_t bank_of(const key_type& key) {
    return static_cast<std::size_t>(BankHasher{}(key) % static_cast<std::size_t>(NumBanks));
  }
  template <class V>
  bool emplace_locked(V&& value) {
    const std::size_t b = bank_of(value.first);
    auto lock = utility::mutex::mutex_lock<NumBanks>(b);
    const bool inserted = banks_[b].insert(std::forward<V>(value)).second;
    if (inserted) size_.fetch_add(1, std::memory_order_acq_rel);
    return inserted;
  }
  // The mapped value of key, inserted if absent. Bank lock held.
  mapped_type& slot(const key_type& key) {
    auto [it, inserted] = banks_[bank_of(key)].try_emplace(key);
    if (inserted) size_.fetch_add(1, std::memory_order_acq_rel);
    return it->second;
  }

  banks_type banks_;
  std::atomic<size_type> size_{0};
};

}  // namespace metall::container
