#include <pheap/graph/rmat.hpp>

#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include <pheap/error.hpp>

namespace pheap::graph {
namespace {

// splitmix64: a counter-based stream; state advances by the golden gamma.
inline std::uint64_t splitmix_next(std::uint64_t& s) noexcept {
  s += 0x9E3779B97F4A7C15ULL;
  std::uint64_t z = s;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

constexpr double kTwo53 = 9007199254740992.0;

}  // namespace

rmat_generator::rmat_generator(const rmat_params& p) : p_(p) {
  if (p.scale < 1 || p.scale > 62) {
    throw error(errc::invalid_argument, "", "rmat",
                "scale must be in 1..62, got " + std::to_string(p.scale));
  }
  if (p.edge_factor == 0) throw error(errc::invalid_argument, "", "rmat", "edge factor must be > 0");
  if (p.edge_factor > (~std::uint64_t{0} >> p.scale)) {
    throw error(errc::invalid_argument, "", "rmat", "edge_factor * 2^scale overflows uint64");
  }
  for (double x : {p.a, p.b, p.c}) {
    if (!(x >= 0.0) || !(x <= 1.0)) {
      throw error(errc::invalid_argument, "", "rmat", "a, b, c must each be in [0, 1]");
    }
  }
  if (p.a + p.b + p.c > 1.0 + 1e-12) {
    throw error(errc::invalid_argument, "", "rmat", "a + b + c must be <= 1 (d = 1 - a - b - c)");
  }
  edges_ = p.edge_factor << p.scale;
  mask_ = (std::uint64_t{1} << p.scale) - 1;
  std::uint64_t s = p.seed ^ 0x5CA3B1E5CA3B1E5ULL;
  scramble_key_ = splitmix_next(s);
  auto thr = [](double x) {
    const double v = std::floor(x * kTwo53);
    return v >= kTwo53 ? (std::uint64_t{1} << 53) : static_cast<std::uint64_t>(v);
  };
  ta_ = thr(p.a);
  tab_ = thr(p.a + p.b);
  tabc_ = thr(p.a + p.b + p.c);
}

std::uint64_t rmat_generator::permute(std::uint64_t x) const noexcept {
  if (!p_.scramble) return x;
  // Composition of bijections of [0, 2^scale): xor with a key, multiply by an odd constant
  // mod 2^scale, xor-shift right. Each step is invertible, hence so is the whole.
  const unsigned sh = p_.scale / 2 + 1;
  x = (x ^ scramble_key_) & mask_;
  x = (x * 0x9E3779B97F4A7C15ULL) & mask_;
  x ^= x >> sh;
  x = (x * 0xC2B2AE3D27D4EB4FULL) & mask_;
  x ^= x >> sh;
  x = (x * 0x165667B19E3779F9ULL) & mask_;
  return x;
}

edge rmat_generator::operator()(std::uint64_t i) const noexcept {
  std::uint64_t s = mix64(p_.seed * 0xD6E8FEB86659FD93ULL ^ mix64(i + 0x632BE59BD9B4E019ULL));
  std::uint64_t u = 0, v = 0;
  for (unsigned level = 0; level < p_.scale; ++level) {
    const std::uint64_t r = splitmix_next(s) >> 11;  // uniform in [0, 2^53)
    u <<= 1;
    v <<= 1;
    if (r < ta_) {
    } else if (r < tab_) {
      v |= 1;
    } else if (r < tabc_) {
      u |= 1;
    } else {
      u |= 1;
      v |= 1;
    }
  }
  edge e{permute(u), permute(v), 0};
  if (p_.weights != weight_kind::none) {
    const std::uint64_t h = splitmix_next(s);
    if (p_.weights == weight_kind::u64) {
      e.weight = 1 + (h >> 44);  // [1, 2^20]
    } else {
      e.weight = f32_bits(static_cast<float>(h >> 40) * (1.0f / 16777216.0f));  // [0, 1)
    }
  }
  return e;
}

void rmat_generator::generate(std::uint64_t first, std::size_t count, edge* out,
                              unsigned threads) const {
  if (threads <= 1 || count < 4096) {
    for (std::size_t k = 0; k < count; ++k) out[k] = (*this)(first + k);
    return;
  }
  std::vector<std::thread> pool;
  const std::size_t per = (count + threads - 1) / threads;
  for (unsigned t = 0; t < threads; ++t) {
    const std::size_t lo = t * per;
    const std::size_t hi = std::min(count, lo + per);
    if (lo >= hi) break;
    pool.emplace_back([this, first, out, lo, hi] {
      for (std::size_t k = lo; k < hi; ++k) out[k] = (*this)(first + k);
    });
  }
  for (auto& t : pool) t.join();
}

}  // namespace pheap::graph
