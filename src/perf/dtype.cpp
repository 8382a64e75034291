#include "keel/perf/dtype.hpp"

namespace keel::perf {

dtype parse_dtype(std::string_view text) {
  return keel::parse_dtype(text, k_model_dtypes, dtype_style::keel);
}

}  // namespace keel::perf
