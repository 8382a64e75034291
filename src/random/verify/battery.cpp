#include "keel/random/battery.hpp"

#include <fmt/format.h>

#include <cstdint>

#include "keel/core/error.hpp"
#include "keel/random/generator.hpp"
#include "keel/random/philox.hpp"

namespace keel::random {
namespace {

void check(status s, const char* what) {
  if (s != status::success) throw keel::backend_error(fmt::format("{}: {}", what, to_string(s)));
}

}  // namespace

battery_report run_battery(std::size_t n) {
  battery_report r;
  r.samples = n;
  generator g(rng_type::philox4_32_10);
  g.set_seed(20240611);
  std::vector<float> u(n), z(n);
  check(g.generate_uniform(u.data(), n), "uniform");
  check(g.generate_normal(z.data(), n, 0, 1), "normal");
  r.battery.push_back(chi_square_uniform(u, 1000));
  r.battery.push_back(serial_correlation(u));
  r.battery.push_back(kolmogorov_smirnov_normal(z));
  r.battery.push_back(anderson_darling_normal(z));
  for (auto& m : moments_normal(z)) r.battery.push_back(m);
  r.battery.push_back(serial_correlation(z));

  // The trap: one LCG per thread seeded with the thread index, against Philox subsequences.
  const stream_fn lcg = [](std::uint64_t s, std::size_t k, std::uint32_t* out) {
    std::uint32_t x = static_cast<std::uint32_t>(s);
    for (std::size_t i = 0; i < k; ++i) out[i] = x = 1664525u * x + 1013904223u;
  };
  const stream_fn philox = [](std::uint64_t s, std::size_t k, std::uint32_t* out) {
    const philox_key key = philox_key_from_seed(42);
    for (std::size_t i = 0; i < k; i += 4) {
      const auto c = philox4x32_10(philox_ctr_of(i / 4, s), key);
      for (std::size_t j = 0; j < 4 && i + j < k; ++j) out[i + j] = c.v[j];
    }
  };
  r.lcg_differences = inter_stream_differences(lcg, r.streams, r.steps);
  r.philox_differences = inter_stream_differences(philox, r.streams, r.steps);
  r.lcg_correlation = inter_stream_correlation(lcg, r.streams, r.steps);
  r.philox_correlation = inter_stream_correlation(philox, r.streams, r.steps);

  r.battery_pass = true;
  for (const auto& t : r.battery) r.battery_pass = r.battery_pass && t.p_value > r.alpha;
  r.trap_shown = r.lcg_differences.p_value < r.alpha && r.philox_differences.p_value > r.alpha;
  return r;
}

}  // namespace keel::random
