// The parts of build_trace_model (trace_model.cpp) that stand on their own: the notes it
// collects, the checks of a snapshot before it is modelled (snapshot_checks.cpp) and the
// reading of the recorded allocator settings (recorded_config.cpp). Pure functions;
// thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "keel/memory/trace_model.hpp"

namespace keel::memory::trace_detail {

inline constexpr std::uint64_t k_small_segment = 2u << 20;  // PyTorch's kSmallBuffer
inline constexpr std::uint64_t k_small_request = 1u << 20;  // PyTorch's kSmallSize
inline constexpr std::uint64_t k_large_page = 20u
                                              << 20;  // expandable large-pool page (kLargeBuffer)
inline constexpr std::uint64_t k_large_segment = 20u << 20;  // PyTorch's floor for the split sizes
inline constexpr std::uint64_t k_top = ~std::uint64_t{0};

inline std::uint64_t add_saturating(std::uint64_t a, std::uint64_t b) {
  return b > k_top - a ? k_top : a + b;
}

// What the reconstruction had to assume; a repeated finding counts up instead of repeating.
class note_book {
 public:
  void add(std::string text, std::string example) {
    for (model_note& n : notes_) {
      if (n.text == text) {
        ++n.count;
        return;
      }
    }
    notes_.push_back({std::move(text), std::move(example), 1});
  }
  std::vector<model_note> take() { return std::move(notes_); }

 private:
  std::vector<model_note> notes_;
};

// Throws keel::invalid_argument("where: what").
[[noreturn]] void refuse(const std::string& where, const std::string& what);

// Throws keel::invalid_argument naming the place for what read_snapshot refuses (see
// build_trace_model); notes what is odd but usable.
void check_snapshot(const snapshot& s, int device, note_book& notes);

// The PYTORCH_CUDA_ALLOC_CONF grammar the recorded settings are read with.
pytorch_grammar recorded_grammar(const allocator_settings& r);

// Notes where the recorded string and the recorded values disagree, or the string needed the
// other grammar.
void settings_notes(const allocator_settings& r, note_book& notes);

}  // namespace keel::memory::trace_detail
