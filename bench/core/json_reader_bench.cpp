// keel::json_reader vs. nlohmann::json's SAX parser (no DOM), side by side on the same text.
// bytes_per_second is input bytes read per second.
//
//   mooncake: the bundled Mooncake trace (3,993 JSON lines, 1.1 MB, mostly integer arrays),
//             one line at a time, taking timestamp, input_length, output_length and hash_ids
//             as the trace loader does.
//   snapshot: one document shaped like a memory snapshot's JSON (device_traces of events with
//             strings, addresses and stack frames, ~4 MB), every value visited.
// After the table it prints keel's rate over nlohmann's for each workload.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "keel/core/json_reader.hpp"
#include "ratio_reporter.hpp"

namespace {

using keel::json_event;
using keel::json_number;
using keel::json_reader;

struct request {
  std::uint64_t timestamp = 0, input_length = 0, output_length = 0;
  std::vector<std::uint64_t> ids;
};

const std::string& mooncake() {
  static const std::string text = [] {
    std::ifstream in(std::string(KEEL_SOURCE_DIR) + "/examples/kv/mooncake-synthetic.jsonl",
                     std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }();
  return text;
}

const std::string& snapshot() {
  static const std::string text = [] {
    std::string t = R"({"segments": [], "device_traces": [[)";
    for (int i = 0; i < 20000; ++i) {
      if (i > 0) t += ", ";
      t += R"({"action": ")" + std::string(i % 2 ? "free_completed" : "alloc") + R"(", "addr": )" +
           std::to_string(139637976727552ull + 512ull * i) + R"(, "size": )" +
           std::to_string(512 * (i % 97 + 1)) + R"(, "stream": 0, "time_us": )" +
           std::to_string(1700000000000000ull + i) +
           R"(, "frames": [{"filename": "/opt/conda/lib/python3.11/site-packages/torch/nn/)"
           R"(modules/linear.py", "line": 125, "name": "forward"}, {"filename": "train.py", )"
           R"("line": )" +
           std::to_string(i % 300) + R"(, "name": "step\u00e9"}]})";
    }
    return t + "]]}";
  }();
  return text;
}

template <class F>
void for_lines(std::string_view text, F&& f) {
  std::size_t pos = 0, line = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    ++line;
    if (nl > pos) f(text.substr(pos, nl - pos), line);
    pos = nl + 1;
  }
}

std::size_t keel_mooncake(std::string_view text) {
  std::size_t n = 0;
  keel::json_reader rd({}, "mooncake");
  for_lines(text, [&](std::string_view line, std::size_t line_no) {
    rd.reset(line, line_no);
    if (rd.next() != json_event::begin_object) throw std::runtime_error("not an object");
    request r;
    const auto number = [&](json_event e) {
      if (e != json_event::number || rd.number_type() != json_number::unsigned_integer)
        throw std::runtime_error("not an integer");
      return rd.as_unsigned();
    };
    for (json_event e = rd.next(); e != json_event::end_object; e = rd.next()) {
      const std::string_view key = rd.string();
      e = rd.next();
      if (key == "timestamp") {
        r.timestamp = number(e);
      } else if (key == "input_length") {
        r.input_length = number(e);
      } else if (key == "output_length") {
        r.output_length = number(e);
      } else if (key == "hash_ids") {
        for (e = rd.next(); e != json_event::end_array; e = rd.next()) r.ids.push_back(number(e));
      } else {
        rd.skip();
      }
    }
    rd.next();
    n += r.ids.size();
  });
  return n;
}

// The same fields from nlohmann's SAX events.
struct nlohmann_line {
  request* r;
  int depth = 0;
  int field = 0;  // 1 timestamp, 2 input_length, 3 output_length, 4 hash_ids, 5 other
  using string_t = std::string;
  bool put(std::uint64_t v) {
    if (depth == 1 && field == 1) r->timestamp = v;
    if (depth == 1 && field == 2) r->input_length = v;
    if (depth == 1 && field == 3) r->output_length = v;
    if (depth == 2 && field == 4) r->ids.push_back(v);
    return true;
  }
  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(std::int64_t v) { return put(static_cast<std::uint64_t>(v)); }
  bool number_unsigned(std::uint64_t v) { return put(v); }
  bool number_float(double v, const string_t&) { return put(static_cast<std::uint64_t>(v)); }
  bool string(string_t&) { return true; }
  bool binary(nlohmann::json::binary_t&) { return false; }
  bool start_object(std::size_t) { return step(1); }
  bool end_object() { return step(-1); }
  bool start_array(std::size_t) { return step(1); }
  bool end_array() { return step(-1); }
  bool step(int d) {
    depth += d;
    return true;
  }
  bool key(string_t& k) {
    if (depth == 1)
      field = k == "timestamp"       ? 1
              : k == "input_length"  ? 2
              : k == "output_length" ? 3
              : k == "hash_ids"      ? 4
                                     : 5;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    throw std::runtime_error("bad JSON");
  }
};

std::size_t nlohmann_mooncake(std::string_view text) {
  std::size_t n = 0;
  for_lines(text, [&](std::string_view line, std::size_t) {
    request r;
    nlohmann_line h{&r};
    nlohmann::json::sax_parse(line.begin(), line.end(), &h);
    n += r.ids.size();
  });
  return n;
}

std::size_t keel_snapshot(std::string_view text) {
  keel::json_reader rd(text, "snapshot");
  std::size_t n = 0;
  for (json_event e = rd.next(); e != json_event::end; e = rd.next()) {
    if (e == json_event::key || e == json_event::string) n += rd.string().size();
    if (e == json_event::number) n += rd.as_unsigned() & 1;
  }
  return n;
}

struct nlohmann_walk {
  std::size_t n = 0;
  using string_t = std::string;
  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(std::int64_t v) { return count(static_cast<std::size_t>(v & 1)); }
  bool number_unsigned(std::uint64_t v) { return count(v & 1); }
  bool number_float(double, const string_t&) { return true; }
  bool string(string_t& s) { return count(s.size()); }
  bool binary(nlohmann::json::binary_t&) { return false; }
  bool start_object(std::size_t) { return true; }
  bool end_object() { return true; }
  bool start_array(std::size_t) { return true; }
  bool end_array() { return true; }
  bool key(string_t& s) { return count(s.size()); }
  bool count(std::size_t k) {
    n += k;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    throw std::runtime_error("bad JSON");
  }
};

std::size_t nlohmann_snapshot(std::string_view text) {
  nlohmann_walk h;
  nlohmann::json::sax_parse(text.begin(), text.end(), &h);
  return h.n;
}

template <std::size_t (*F)(std::string_view)>
void run(benchmark::State& state, const std::string& text) {
  for (auto _ : state) benchmark::DoNotOptimize(F(text));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}

void BM_keel_reader_mooncake(benchmark::State& s) { run<keel_mooncake>(s, mooncake()); }
void BM_nlohmann_sax_mooncake(benchmark::State& s) { run<nlohmann_mooncake>(s, mooncake()); }
void BM_keel_reader_snapshot(benchmark::State& s) { run<keel_snapshot>(s, snapshot()); }
void BM_nlohmann_sax_snapshot(benchmark::State& s) { run<nlohmann_snapshot>(s, snapshot()); }
BENCHMARK(BM_keel_reader_mooncake)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_nlohmann_sax_mooncake)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_keel_reader_snapshot)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_nlohmann_sax_snapshot)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  keel::bench::ratio_reporter reporter(
      "bytes_per_second",
      {"BM_keel_reader_", "keel json_reader", "BM_nlohmann_sax_", "nlohmann SAX", " MB/s", 0},
      {"mooncake", "snapshot"});
  return keel::bench::run_with_ratios(argc, argv, reporter);
}
