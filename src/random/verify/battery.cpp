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
  if (!r.battery_pass || !r.trap_shown) r.failure = "statistical battery failed";
  return r;
}

nlohmann::json to_json(const battery_report& b) {
  auto row = [](const test_result& r) {
    return nlohmann::json{{"test", r.name}, {"statistic", r.statistic}, {"p", r.p_value}};
  };
  nlohmann::json battery = nlohmann::json::array(), streams;
  for (const auto& r : b.battery) battery.push_back(row(r));
  streams["lcg_per_thread_seed"] = {row(b.lcg_differences), row(b.lcg_correlation)};
  streams["philox_subsequences"] = {row(b.philox_differences), row(b.philox_correlation)};
  return {{"samples", b.samples},
          {"generator", "philox4_32_10"},
          {"alpha", b.alpha},
          {"battery", battery},
          {"inter_stream", streams},
          {"streams", b.streams},
          {"steps", b.steps},
          {"battery_pass", b.battery_pass},
          {"lcg_fails_philox_passes", b.trap_shown}};
}

std::string to_text(const battery_report& b) {
  std::string text = fmt::format("philox4_32_10, {} samples (alpha {}):\n", b.samples, b.alpha);
  for (const auto& r : b.battery)
    text += fmt::format("  {:45} {:12.4f}  p = {:.4g}\n", r.name, r.statistic, r.p_value);
  text +=
      fmt::format("{} streams seeded 0..{}, {} steps each:\n", b.streams, b.streams - 1, b.steps);
  for (const auto* r : {&b.lcg_differences, &b.lcg_correlation})
    text += fmt::format("  LCG per thread  {:52} {:14.2f}  p = {:.4g}\n", r->name, r->statistic,
                        r->p_value);
  for (const auto* r : {&b.philox_differences, &b.philox_correlation})
    text += fmt::format("  Philox subseq.  {:52} {:14.2f}  p = {:.4g}\n", r->name, r->statistic,
                        r->p_value);
  text += b.battery_pass ? "battery: pass\n" : "battery: FAIL\n";
  text += b.trap_shown ? "inter-stream: LCG fails, Philox passes\n"
                       : "inter-stream: unexpected outcome\n";
  return text;
}

}  // namespace keel::random
