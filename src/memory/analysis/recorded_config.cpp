// The allocator config recorded settings describe (keel/memory/trace_model.hpp).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string_view>

#include "keel/core/error.hpp"
#include "trace_model_parts.hpp"

namespace keel::memory {
namespace trace_detail {
namespace {

bool recorded(const allocator_settings& r, std::string_view key) {
  // Settings built in memory (not read from a file) have no keys: every field counts.
  return r.keys.empty() || std::find(r.keys.begin(), r.keys.end(), key) != r.keys.end();
}

// The recorded PYTORCH_CUDA_ALLOC_CONF read as `--conf` reads a PyTorch string: strictly, with
// the grammar the settings imply, else with the other one (which the caller notes).
struct recorded_conf {
  allocator_config config;
  pytorch_grammar grammar = k_newest_pytorch_grammar;
  bool implied = true;  // read with the implied grammar
  std::string refusal;  // when not: what the implied grammar said
};

recorded_conf read_recorded_conf(const allocator_settings& r) {
  recorded_conf out;
  out.grammar = grammar_for_settings(r.keys, r.conf);
  if (r.conf.empty()) return out;
  try {
    out.config = allocator_config::parse_pytorch(r.conf, out.grammar).config;
    return out;
  } catch (const invalid_argument& e) {
    out.refusal = e.what();
  }
  const pytorch_grammar other = out.grammar == pytorch_grammar::cuda_allocator_config
                                    ? pytorch_grammar::accelerator_allocator_config
                                    : pytorch_grammar::cuda_allocator_config;
  try {
    out.config = allocator_config::parse_pytorch(r.conf, other).config;
  } catch (const invalid_argument&) {
    throw invalid_argument(
        fmt::format("{} (no PyTorch reads it, so no PyTorch recorded it)", out.refusal));
  }
  out.grammar = other;
  out.implied = false;
  return out;
}

std::size_t as_size(std::int64_t v) {
  return static_cast<std::size_t>(
      std::clamp<std::int64_t>(v, 0, static_cast<std::int64_t>(k_max_device_bytes)));
}

allocator_config overlay(allocator_config c, const allocator_settings& r) {
  if (recorded(r, "expandable_segments")) c.expandable_segments = r.expandable_segments;
  if (recorded(r, "max_split_size")) {
    c.max_split_size =
        r.max_split_size > 0 ? as_size(r.max_split_size) : allocator_config::k_unlimited;
  }
  if (recorded(r, "garbage_collection_threshold")) {
    const double t = r.garbage_collection_threshold;
    c.garbage_collection_threshold = t > 0.0 && t < 1.0 ? t : 0.0;
  }
  if (recorded(r, "roundup_power2_divisions") && !r.roundup_power2_divisions.empty()) {
    for (std::size_t i = 0; i < allocator_config::k_intervals; ++i) {
      const std::int64_t d =
          i < r.roundup_power2_divisions.size() ? r.roundup_power2_divisions[i] : 0;
      c.roundup_power2_divisions[i] = d > 0 ? static_cast<std::size_t>(d) : 0;
    }
  }
  if (r.max_non_split_rounding_size && *r.max_non_split_rounding_size > 0) {
    c.max_non_split_rounding_size = as_size(*r.max_non_split_rounding_size);
  }
  return c;
}

// What is odd but usable about the recorded settings.
}  // namespace

void settings_notes(const allocator_settings& r, note_book& notes) {
  const recorded_conf conf = read_recorded_conf(r);
  if (!conf.implied) {
    notes.add(fmt::format("the recorded PYTORCH_CUDA_ALLOC_CONF is read as {} reads it: the {} "
                          "grammar its settings imply refuses it ({})",
                          to_string(conf.grammar), to_string(grammar_for_settings(r.keys, r.conf)),
                          conf.refusal),
              r.conf);
  }
  if (!r.conf.empty()) {
    const allocator_config& a = conf.config;
    const allocator_config b = overlay(a, r);
    const auto differ = [&](std::string_view key, const std::string& in_conf,
                            const std::string& in_settings) {
      notes.add(fmt::format("the recorded PYTORCH_CUDA_ALLOC_CONF and the recorded settings "
                            "disagree on {}; the replay uses the recorded settings",
                            key),
                fmt::format("{} in the string, {} in the settings", in_conf, in_settings));
    };
    const auto limit = [](std::size_t v) {
      return v == allocator_config::k_unlimited ? std::string("unlimited") : std::to_string(v);
    };
    if (a.expandable_segments != b.expandable_segments)
      differ("expandable_segments", a.expandable_segments ? "True" : "False",
             b.expandable_segments ? "True" : "False");
    if (a.max_split_size != b.max_split_size)
      differ("max_split_size", limit(a.max_split_size), limit(b.max_split_size));
    if (a.garbage_collection_threshold != b.garbage_collection_threshold)
      differ("garbage_collection_threshold", fmt::format("{}", a.garbage_collection_threshold),
             fmt::format("{}", b.garbage_collection_threshold));
    if (a.roundup_power2_divisions != b.roundup_power2_divisions)
      differ("roundup_power2_divisions",
             fmt::format("{}", fmt::join(a.roundup_power2_divisions, ",")),
             fmt::format("{}", fmt::join(b.roundup_power2_divisions, ",")));
    if (a.max_non_split_rounding_size != b.max_non_split_rounding_size)
      differ("max_non_split_rounding_size", limit(a.max_non_split_rounding_size),
             limit(b.max_non_split_rounding_size));
  }
}

pytorch_grammar recorded_grammar(const allocator_settings& r) {
  return read_recorded_conf(r).grammar;
}

}  // namespace trace_detail

using namespace trace_detail;

allocator_config recorded_config(const allocator_settings& settings) {
  const allocator_config c = overlay(read_recorded_conf(settings).config, settings);
  // What the settings amount to must be a config PyTorch can have: its string reads back.
  const std::string text = c.pytorch_string();
  std::string refusal;
  for (const pytorch_grammar g :
       {pytorch_grammar::accelerator_allocator_config, pytorch_grammar::cuda_allocator_config}) {
    try {
      (void)allocator_config::parse_pytorch(text, g);
      return c;
    } catch (const invalid_argument& e) {
      if (refusal.empty()) refusal = e.what();
    }
  }
  throw invalid_argument(fmt::format(
      "the recorded settings amount to '{}', which no PyTorch accepts ({})", text, refusal));
}

allocator_config recorded_config(const snapshot& s) {
  return s.settings ? recorded_config(*s.settings) : allocator_config{};
}

}  // namespace keel::memory
