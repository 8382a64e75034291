// libFuzzer target for the restricted pickle reader and the snapshot reader/writers.
//
// Every input must either parse or raise keel::parse_error; anything else (a crash, an
// ASan/UBSan report, another exception, a leak, a hang) is a finding. Inputs that parse as
// snapshots must also survive a round trip: written as a pickle and read back they compare
// equal, and written as JSON they read back with the same shape.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string_view>

#include "keel/core/error.hpp"
#include "keel/memory/pickle.hpp"
#include "keel/memory/snapshot.hpp"

namespace {

using namespace keel::memory;

// Visits every node reachable from v (shared nodes once per reference, with a budget so a
// tree of shared references cannot make this quadratic), touching every accessor.
std::size_t walk(const pickle::value& v, std::size_t& budget) {
  if (budget == 0) return 0;
  --budget;
  std::size_t n = 1;
  switch (v.type()) {
    case pickle::kind::integer:
      n += v.is_big_unsigned() ? v.as_uint64() & 1 : static_cast<std::size_t>(v.as_int() & 1);
      break;
    case pickle::kind::floating: n += v.as_double() > 0; break;
    case pickle::kind::string:
    case pickle::kind::bytes: n += v.as_string().size(); break;
    case pickle::kind::boolean: n += v.as_bool(); break;
    case pickle::kind::list:
    case pickle::kind::tuple:
      for (std::size_t i = 0; i < v.size(); ++i) n += walk(v[i], budget);
      break;
    case pickle::kind::dict:
      for (std::size_t i = 0; i < v.size(); ++i)
        n += walk(v.key(i), budget) + walk(v.item(i), budget);
      if (v.size() > 0 && v.key(0).is(pickle::kind::string))
        n += v.get(v.key(0).as_string()).has_value();
      break;
    case pickle::kind::none: break;
  }
  return n;
}

void round_trip(const snapshot& s) {
  std::ostringstream p;
  write_snapshot_pickle(s, p);
  const std::string bytes = p.str();
  const snapshot again =
      parse_snapshot_pickle(std::as_bytes(std::span(bytes.data(), bytes.size())), "rt");
  if (!(again == s)) std::abort();  // the pickle writer lost or changed something

  std::ostringstream j;
  write_snapshot_json(s, j);
  const snapshot from_json = parse_snapshot_json(j.str(), "rt.json");
  // JSON joins UTF-16 surrogate pairs that a pickle may keep apart, so compare the shape.
  if (from_json.segments.size() != s.segments.size() ||
      from_json.device_traces.size() != s.device_traces.size() ||
      from_json.settings.has_value() != s.settings.has_value() ||
      from_json.segments_only != s.segments_only)
    std::abort();
  for (std::size_t d = 0; d < s.device_traces.size(); ++d)
    if (from_json.device_traces[d].size() != s.device_traces[d].size()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const pickle::document doc = pickle::parse(bytes, "fuzz");
    std::size_t budget = 1 << 20;
    walk(doc.root(), budget);
  } catch (const keel::parse_error&) {
  }
  try {
    round_trip(parse_snapshot_pickle(bytes, "fuzz"));
  } catch (const keel::parse_error&) {
  }
  try {
    const pickle::document doc = pickle::parse_json(text, "fuzz.json");
    std::size_t budget = 1 << 20;
    walk(doc.root(), budget);
    round_trip(parse_snapshot_json(text, "fuzz.json"));
  } catch (const keel::parse_error&) {
  }
  return 0;
}
