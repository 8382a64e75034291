// Elementwise reduction kernels (internal). dst[i] = a[i] op b[i]; dst may alias a or b.
// avg reduces as sum; finish_avg divides by the rank count afterwards. f16/bf16 compute in
// f32 and round once per call. Integer sum/prod wrap (two's complement), never UB.
#pragma once

#include <cstddef>

#include "keel/comm/types.hpp"

namespace keel::comm::detail {

void reduce(void* dst, const void* a, const void* b, std::size_t count, dtype t, reduce_op op);
void finish_avg(void* buf, std::size_t count, dtype t, int ranks);

}  // namespace keel::comm::detail
