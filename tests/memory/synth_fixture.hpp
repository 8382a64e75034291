// A small synthesized training run (3 steps of a 4-layer transformer, sequences 64-512) that
// the replay and analysis tests share: recorded from an empty allocator, with segment events.
#pragma once

#include "keel/memory/synth.hpp"

namespace keel::memory::test {

inline snapshot small_training_run() {
  synth_options o;
  o.steps = 3;
  o.layers = 4;
  o.hidden = 512;
  o.batch = 4;
  o.min_seq = 64;
  o.max_seq = 512;
  return synthesize(o);
}

}  // namespace keel::memory::test
