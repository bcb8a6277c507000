#include "store.hpp"

#include <pheap/fault_guard.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <utility>
#include <vector>

#include "errors.hpp"

namespace pyheap {

namespace {

// Every store of this process (weakly): for release_hint and flush_all_at_exit.
std::mutex g_registry_mu;
std::vector<std::weak_ptr<store>>& registry() {
  static auto* r = new std::vector<std::weak_ptr<store>>();  // never destroyed: used at exit
  return *r;
}

struct view_ref {
  store_ptr s;
  const void* key;
};

}  // namespace

store::store(std::unique_ptr<pheap::manager> m, std::string path, pheap::huge_pages_mode huge_pages_asked)
    : m_(std::move(m)), path_(std::move(path)), read_only_(m_->read_only()),
      page_size_(m_->stats().page_size), huge_pages_asked_(huge_pages_asked) {}

store::~store() {
  if (abandoned_) (void)m_.release();  // no flush, ever: see abandon()
  // else the manager's destructor flushes (read-write) and never throws
}

void store::abandon() noexcept {
  std::lock_guard<std::mutex> g(exports_mu_);
  closed_ = true;
  abandoned_ = true;
}

pheap::manager& store::manager() const {
  if (closed_) raise_closed(path_, "the datastore");
  return *m_;
}

pheap::manager& store::writable(const std::string& op) const {
  pheap::manager& m = manager();
  if (read_only_) {
    throw pheap::error(pheap::errc::read_only, path_, op, "the datastore was opened read-only");
  }
  return m;
}

void store::close() {
  if (closed_) return;
  // Flush first, with the manager certainly alive (the caller holds mu exclusively, and no
  // view can release it before closed_ is set); then closed, and released unless views live.
  std::exception_ptr failed;
  if (!read_only_) {
    try {
      m_->flush();
    } catch (...) {
      failed = std::current_exception();  // the store is closed all the same
    }
  }
  std::unique_ptr<pheap::manager> gone;
  {
    std::lock_guard<std::mutex> g(exports_mu_);
    closed_ = true;
    if (exports_.empty()) gone = std::move(m_);  // no view: unmap and unlock now
  }
  gone.reset();
  if (failed) std::rethrow_exception(failed);
}

std::uint64_t store::refresh() {
  pheap::manager& m = manager();
  if (!read_only_) {
    throw pheap::error(pheap::errc::invalid_argument, path_, "refresh",
                       "the datastore is open read-write, and a writer always reads its newest watermark; "
                       "refresh() moves a read-only handle");
  }
  if (const long k = exports(); k > 0) {
    throw nb::buffer_error(("pheap: refresh " + path_ + ": " + std::to_string(k) +
                            " NumPy view(s) of this datastore are alive, and after the refresh they would read "
                            "whatever the newer watermark holds at their address; delete them first")
                               .c_str());
  }
  return m.refresh();
}

long store::exports(const void* key) const {
  std::lock_guard<std::mutex> g(exports_mu_);
  auto it = exports_.find(key);
  return it == exports_.end() ? 0 : it->second;
}

long store::exports() const {
  std::lock_guard<std::mutex> g(exports_mu_);
  long n = 0;
  for (const auto& [k, v] : exports_) n += v;
  return n;
}

void store::add_export(const void* key) {
  std::lock_guard<std::mutex> g(exports_mu_);
  ++exports_[key];
}

void store::drop_export(const void* key) noexcept {
  std::unique_ptr<pheap::manager> gone;
  {
    std::lock_guard<std::mutex> g(exports_mu_);
    auto it = exports_.find(key);
    if (it != exports_.end() && --it->second == 0) exports_.erase(it);
    // The last view of a closed store: unmap and unlock (flushing writes made through views
    // after close(); the destructor reports a failure on stderr).
    if (closed_ && !abandoned_ && exports_.empty()) gone = std::move(m_);
  }
}

void store::touch(const void* p, std::size_t bytes) const {
  if (bytes == 0 || p == nullptr) return;
  const pheap::manager::memory_range r{p, bytes};
  m_->prefetch(std::span<const pheap::manager::memory_range>(&r, 1));
  const auto* c = static_cast<const volatile unsigned char*>(p);
  const std::size_t step = static_cast<std::size_t>(page_size_);
  pheap::guard_faults([&] {
    unsigned char sink = 0;
    for (std::size_t at = 0; at < bytes; at += step) sink ^= c[at];
    sink ^= c[bytes - 1];
    (void)sink;
  });
}

store_ptr open_store(const std::string& path, bool create, bool read_only, const pheap::options& o) {
  std::unique_ptr<pheap::manager> m;
  try {
    if (create) {
      m = std::make_unique<pheap::manager>(pheap::create_only, path, o);
    } else if (read_only) {
      m = std::make_unique<pheap::manager>(pheap::open_read_only, path, o);
    } else {
      m = std::make_unique<pheap::manager>(pheap::open_only, path, o);
    }
  } catch (const pheap::error& e) {
    if (e.code() != pheap::errc::locked) throw;
    const std::string hint = release_hint(path);
    if (hint.empty()) throw;
    // Re-made with the hint after the cause (what() is "pheap: OP PATH: CAUSE").
    const std::string prefix = "pheap: " + e.op() + (e.path().empty() ? "" : " " + e.path()) + ": ";
    std::string cause = e.what();
    if (cause.rfind(prefix, 0) == 0) cause.erase(0, prefix.size());
    throw pheap::error(e.code(), e.path(), e.op(), cause + hint, e.sys_errno());
  }
  auto s = std::make_shared<store>(std::move(m), path, o.pager.huge_pages);
  std::lock_guard<std::mutex> g(g_registry_mu);
  auto& r = registry();
  r.erase(std::remove_if(r.begin(), r.end(), [](const std::weak_ptr<store>& w) { return w.expired(); }), r.end());
  r.push_back(s);
  return s;
}

std::string release_hint(const std::string& path) {
  std::lock_guard<std::mutex> g(g_registry_mu);
  long views = 0;
  for (const auto& w : registry()) {
    if (auto s = w.lock(); s && s->closed() && s->path() == path) views += s->exports();
  }
  if (views == 0) return "";
  return "; " + std::to_string(views) + " NumPy view(s) of a closed handle of " + path +
         " in this process keep it open until they are deleted";
}

void flush_all_at_exit() noexcept {
  std::vector<store_ptr> open;
  {
    std::lock_guard<std::mutex> g(g_registry_mu);
    for (const auto& w : registry()) {
      if (auto s = w.lock()) open.push_back(std::move(s));
    }
  }
  for (const auto& s : open) {
    try {
      std::unique_lock<std::shared_mutex> l(s->mu());
      if (!s->read_only() && !s->closed()) s->close();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "pheap: at exit: %s\n", e.what());
    }
  }
}

shared_guard::shared_guard(store& s) : s_(s) {
  if (!s_.mu().try_lock_shared()) {
    nb::gil_scoped_release nogil;  // an exclusive holder (a flush) never needs the GIL
    s_.mu().lock_shared();
  }
}

nb::capsule view_owner(const store_ptr& s, const void* key) {
  auto ref = std::make_unique<view_ref>(view_ref{s, key});
  s->add_export(key);
  nb::capsule c(ref.get(), [](void* p) noexcept {
    auto* r = static_cast<view_ref*>(p);
    r->s->drop_export(r->key);
    delete r;
  });
  ref.release();
  return c;
}

void raise_closed(const std::string& path, const std::string& what) {
  throw py_error("closed", path, "use", what + " was closed");
}

}  // namespace pyheap
