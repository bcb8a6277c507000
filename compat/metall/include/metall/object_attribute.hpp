// metall/object_attribute.hpp (pheap's Metall compatibility layer) — object attributes as
// Metall's iterators and attribute accessors show them.
//
// metall::manager's named_begin()/unique_begin()/anonymous_begin() and the accessors of
// manager::access_{named,unique,anonymous}_object_attribute(path) all yield
// object_attribute_iterator; *it is an object_attribute (name(), length(), offset(),
// type_id(), description(), is_type<T>()).
//
// Differences from Metall, by design:
//   * An iterator walks a copy of the directory taken by begin() (pheap's directory lives in
//     the heap; Metall's in DRAM): like Metall's, it is invalidated by construct/destroy, and
//     it does not see them.
//   * type_id() hashes pheap's type identity (pheap::type_name<T>() + size + alignment), not
//     typeid(T).hash_code(); is_type<T>() compares that identity. Unique objects are named by
//     pheap::type_name<T>() ("int"), not typeid(T).name() ("i"): look them up with the
//     count<T>/find<T>(metall::unique_instance) forms.
//   * An accessor opens the datastore read-only (an O(1) open, no heap walk) and fails
//     (good() == false, logged) while another process holds it read-write: pheap locks
//     datastores, Metall v0.30 does not. set_description() opens it read-write for the call.
//   * Dereferencing an end (or default-constructed) iterator yields an empty attribute
//     instead of undefined behaviour.
#pragma once

#include <pheap/manager.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <metall/logger.hpp>
#include <metall/tags.hpp>

namespace metall {

class object_attribute {
 public:
  using size_type = std::size_t;
  using offset_type = std::uint64_t;
  using type_id_type = std::size_t;

  object_attribute() = default;
  explicit object_attribute(const pheap::object_info& i)
      : name_(i.name),
        type_name_(i.type_name),
        description_(i.description),
        kind_(i.kind),
        length_(i.length),
        offset_(i.offset),
        type_size_(i.type_size),
        type_align_(i.type_align) {}

  const std::string& name() const noexcept { return name_; }
  size_type length() const noexcept { return length_; }
  offset_type offset() const noexcept { return offset_; }  // from the heap base
  type_id_type type_id() const noexcept { return id_of(type_name_, type_size_, type_align_); }
  const std::string& description() const noexcept { return description_; }
  pheap::instance_kind kind() const noexcept { return kind_; }
  const std::string& type_name() const noexcept { return type_name_; }
  template <class T>
  bool is_type() const noexcept {
    const auto t = pheap::type_identity::of<T>();
    return type_name_ == t.name && type_size_ == t.size && type_align_ == t.align;
  }

 private:
  friend class object_attribute_accessor;
  static type_id_type id_of(std::string_view name, std::size_t size, std::size_t align) noexcept {
    type_id_type h = std::hash<std::string_view>{}(name);
    h ^= size + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= align + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h;
  }

  std::string name_, type_name_, description_;
  pheap::instance_kind kind_ = pheap::instance_kind::named_kind;
  size_type length_ = 0;
  offset_type offset_ = 0;
  std::size_t type_size_ = 0, type_align_ = 0;
};

// A forward iterator over a snapshot of one directory (named, unique or anonymous).
class object_attribute_iterator {
 public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = object_attribute;
  using difference_type = std::ptrdiff_t;
  using pointer = const object_attribute*;
  using reference = const object_attribute&;

  object_attribute_iterator() = default;
  object_attribute_iterator(std::shared_ptr<std::vector<object_attribute>> entries, std::size_t i)
      : entries_(std::move(entries)), i_(i) {}

  reference operator*() const noexcept { return at_end() ? empty() : (*entries_)[i_]; }
  pointer operator->() const noexcept { return &**this; }
  object_attribute_iterator& operator++() noexcept {
    ++i_;
    return *this;
  }
  object_attribute_iterator operator++(int) noexcept {
    object_attribute_iterator t = *this;
    ++i_;
    return t;
  }
  // All end positions are equal, whichever snapshot they come from.
  bool operator==(const object_attribute_iterator& o) const noexcept {
    if (at_end() || o.at_end()) return at_end() && o.at_end();
    return entries_ == o.entries_ && i_ == o.i_;
  }

 private:
  friend class object_attribute_accessor;
  bool at_end() const noexcept { return !entries_ || i_ >= entries_->size(); }
  static const object_attribute& empty() noexcept {
    static const object_attribute e;
    return e;
  }
  std::shared_ptr<std::vector<object_attribute>> entries_;
  std::size_t i_ = 0;
};

namespace detail {
// The [begin, end) of one kind of m's directory.
inline std::pair<pheap::object_iterator, pheap::object_iterator> directory(const pheap::manager& m,
                                                                           pheap::instance_kind k) {
  switch (k) {
    case pheap::instance_kind::named_kind: return {m.named_begin(), m.named_end()};
    case pheap::instance_kind::unique_kind: return {m.unique_begin(), m.unique_end()};
    case pheap::instance_kind::anonymous_kind: break;
  }
  return {m.anonymous_begin(), m.anonymous_end()};
}
// That directory, copied.
inline std::shared_ptr<std::vector<object_attribute>> snapshot(const pheap::manager& m, pheap::instance_kind k) {
  auto v = std::make_shared<std::vector<object_attribute>>();
  for (auto [first, last] = directory(m, k); first != last; ++first) v->emplace_back(*first);
  return v;
}
inline void log_failure(const char* file, int line, const char* what) noexcept {
  logger::out(logger::level::error, file, line, what);
}
}  // namespace detail

// Metall's object attribute accessor for one kind of object of a datastore that is not open.
class object_attribute_accessor {
 public:
  using size_type = std::size_t;
  using const_iterator = object_attribute_iterator;

  object_attribute_accessor() = default;  // good() == false
  // Reads the directory of kind `k` of the datastore at `path` (read-only open).
  object_attribute_accessor(pheap::instance_kind k, std::string path) noexcept : kind_(k), path_(std::move(path)) {
    try {
      const pheap::manager m(pheap::open_read_only, path_);
      entries_ = detail::snapshot(m, kind_);
      good_ = true;
    } catch (const std::exception& e) {
      detail::log_failure(__FILE__, __LINE__, e.what());
    }
  }

  bool good() const noexcept { return good_; }
  size_type num_objects() const noexcept { return entries_ ? entries_->size() : 0; }

  const_iterator begin() const noexcept { return {entries_, 0}; }
  const_iterator end() const noexcept { return {entries_, num_objects()}; }

  // Named and unique objects by name (a unique object's name is pheap::type_name<T>()).
  const_iterator find(std::string_view name) const noexcept {
    for (std::size_t i = 0; i < num_objects(); ++i) {
      if ((*entries_)[i].name() == name) return {entries_, i};
    }
    return end();
  }
  size_type count(std::string_view name) const noexcept { return find(name) == end() ? 0 : 1; }
  template <class T>
  const_iterator find(const unique_instance_t&) const noexcept {
    return find(pheap::type_name<T>());
  }
  template <class T>
  size_type count(const unique_instance_t&) const noexcept {
    return count(pheap::type_name<T>());
  }

  // Sets the description of one object in the datastore (a read-write open for the call) and
  // in this accessor's copy. False (logged) if absent or the datastore cannot be opened.
  bool set_description(const_iterator it, const std::string& description) noexcept {
    if (!good_ || it.entries_ != entries_ || it.at_end()) return false;
    try {
      pheap::manager m(pheap::open_only, path_);
      for (auto [first, last] = detail::directory(m, kind_); first != last; ++first) {
        const pheap::object_info info = *first;
        if (info.offset != it->offset()) continue;
        m.set_instance_description(static_cast<const char*>(info.value), description);
        (*entries_)[it.i_].description_ = description;
        return true;
      }
      detail::log_failure(__FILE__, __LINE__, "set_description: the object is no longer in the datastore");
    } catch (const std::exception& e) {
      detail::log_failure(__FILE__, __LINE__, e.what());
    }
    return false;
  }
  bool set_description(std::string_view name, const std::string& description) noexcept {
    return set_description(find(name), description);
  }
  template <class T>
  bool set_description(const unique_instance_t&, const std::string& description) noexcept {
    return set_description(find<T>(unique_instance), description);
  }

 private:
  pheap::instance_kind kind_ = pheap::instance_kind::named_kind;
  std::string path_;
  std::shared_ptr<std::vector<object_attribute>> entries_;
  bool good_ = false;
};

}  // namespace metall
