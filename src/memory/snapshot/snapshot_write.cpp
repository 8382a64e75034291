// Snapshot writers: the 2.2+ layout of torch.cuda.memory._snapshot(), as a protocol-4
// pickle or as JSON with the same keys and key order.
#include "keel/core/error.hpp"
#include "keel/memory/pickle.hpp"
#include "keel/memory/snapshot.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <ostream>
#include <unordered_map>

namespace keel::memory {

namespace {

// The two output formats share one walk over the snapshot; `sink` is either format.
template <class Sink>
void emit(const snapshot& s, Sink& out) {
  auto frames = [&](const frame_stack& stack) {
    if (out.reuse(stack)) return;
    out.begin_list();
    for (const frame& f : stack) {
      out.begin_dict();
      out.key("filename");
      out.string(f.filename);
      out.key("line");
      out.integer(f.line);
      out.key("name");
      out.string(f.name);
      out.end_dict();
    }
    out.end_list();
    out.remember(stack);
  };
  auto segment = [&](const snapshot_segment& seg) {
    out.begin_dict();
    out.key("device");
    out.integer(seg.device);
    out.key("address");
    out.unsigned_integer(seg.address);
    out.key("total_size");
    out.unsigned_integer(seg.total_size);
    out.key("allocated_size");
    out.unsigned_integer(seg.allocated_size);
    out.key("active_size");
    out.unsigned_integer(seg.active_size);
    out.key("requested_size");
    out.unsigned_integer(seg.requested_size);
    out.key("stream");
    out.unsigned_integer(seg.stream);
    out.key("segment_type");
    out.string(seg.is_large ? "large" : "small");
    out.key("segment_pool_id");
    out.begin_tuple();
    out.integer(seg.pool_id.first);
    out.integer(seg.pool_id.second);
    out.end_tuple();
    out.key("is_expandable");
    out.boolean(seg.is_expandable);
    out.key("frames");
    frames(seg.frames);
    out.key("blocks");
    out.begin_list();
    for (const snapshot_block& b : seg.blocks) {
      out.begin_dict();
      out.key("address");
      out.unsigned_integer(b.address);
      out.key("size");
      out.unsigned_integer(b.size);
      out.key("requested_size");
      out.unsigned_integer(b.requested_size);
      out.key("state");
      out.string(to_string(b.state));
      out.key("frames");
      frames(b.frames);
      out.end_dict();
    }
    out.end_list();
    out.end_dict();
  };

  if (s.segments_only) {
    out.begin_list();
    for (const auto& seg : s.segments) segment(seg);
    out.end_list();
    return;
  }
  out.begin_dict();
  out.key("segments");
  out.begin_list();
  for (const auto& seg : s.segments) segment(seg);
  out.end_list();
  out.key("device_traces");
  out.begin_list();
  for (const auto& trace : s.device_traces) {
    out.begin_list();
    for (const trace_entry& e : trace) {
      out.begin_dict();
      out.key("action");
      out.string(to_string(e.action));
      if (e.action == trace_action::oom) {
        out.key("device_free");  // PyTorch puts device_free where addr would be
        out.unsigned_integer(e.device_free);
      } else {
        out.key("addr");
        out.unsigned_integer(e.addr);
      }
      out.key("size");
      out.unsigned_integer(e.size);
      out.key("stream");
      out.unsigned_integer(e.stream);
      if (e.time_us) {
        out.key("time_us");
        out.integer(*e.time_us);
      }
      out.key("frames");
      frames(e.frames);
      out.end_dict();
    }
    out.end_list();
  }
  out.end_list();
  if (s.settings) {
    const allocator_settings& a = *s.settings;
    out.key("allocator_settings");
    out.begin_dict();
    out.key("PYTORCH_CUDA_ALLOC_CONF");
    out.string(a.conf);
    out.key("max_split_size");
    out.integer(a.max_split_size);
    out.key("garbage_collection_threshold");
    out.floating(a.garbage_collection_threshold);
    out.key("expandable_segments");
    out.boolean(a.expandable_segments);
    out.key("roundup_power2_divisions");
    out.begin_dict();  // interval start in MiB (1, 2, 4, ...) as a string -> divisions
    for (std::size_t i = 0; i < a.roundup_power2_divisions.size() && i < 63; ++i) {
      out.key(std::to_string(std::uint64_t{1} << i));
      out.integer(a.roundup_power2_divisions[i]);
    }
    out.end_dict();
    if (a.max_non_split_rounding_size) {
      out.key("max_non_split_rounding_size");
      out.integer(*a.max_non_split_rounding_size);
    }
    out.end_dict();
  }
  out.end_dict();
}

class pickle_sink {
 public:
  explicit pickle_sink(std::ostream& out) : w_(out) {}
  void begin_list() { w_.begin_list(); }
  void end_list() { w_.end_list(); }
  void begin_dict() { w_.begin_dict(); }
  void end_dict() { w_.end_dict(); }
  void begin_tuple() { w_.begin_tuple(); }
  void end_tuple() { w_.end_tuple(); }
  void key(std::string_view k) { w_.string(k); }
  void string(std::string_view v) { w_.string(v); }
  void integer(std::int64_t v) { w_.integer(v); }
  void unsigned_integer(std::uint64_t v) { w_.unsigned_integer(v); }
  void floating(double v) { w_.floating(v); }
  void boolean(bool v) { w_.boolean(v); }
  // A stack written before is referenced through the memo (Python shares the list).
  bool reuse(const frame_stack& s) {
    if (s.empty()) return false;
    const auto it = memo_.find(s.identity());
    if (it == memo_.end()) return false;
    w_.get(it->second);
    return true;
  }
  void remember(const frame_stack& s) {
    if (!s.empty()) memo_.emplace(s.identity(), w_.memoize());
  }
  void finish() { w_.finish(); }

 private:
  pickle::writer w_;
  std::unordered_map<const void*, std::uint32_t> memo_;
};

// Appends to a string buffer flushed in large chunks: ostream calls per token are slow.
class json_sink {
 public:
  explicit json_sink(std::ostream& out) : stream_(out) { out_.reserve(k_chunk + 4096); }
  void begin_list() { open('['); }
  void end_list() { close(']'); }
  void begin_dict() { open('{'); }
  void end_dict() { close('}'); }
  void begin_tuple() { open('['); }
  void end_tuple() { close(']'); }
  void key(std::string_view k) {
    separate();
    quote(k);
    out_ += ':';
    after_key_ = true;
  }
  void string(std::string_view v) {
    separate();
    quote(v);
  }
  void integer(std::int64_t v) {
    separate();
    number(v);
  }
  void unsigned_integer(std::uint64_t v) {
    separate();
    number(v);
  }
  void floating(double v) {
    separate();
    if (!std::isfinite(v)) throw keel::invalid_argument("JSON cannot hold a non-finite number");
    // Shortest round-trip form, always with a '.' or exponent so it reads back as a float.
    std::string t = fmt::format("{}", v);
    if (t.find_first_of(".eEn") == std::string::npos) t += ".0";
    out_ += t;
  }
  void boolean(bool v) {
    separate();
    out_ += v ? "true" : "false";
  }
  bool reuse(const frame_stack&) { return false; }
  void remember(const frame_stack&) {}
  void finish() {
    out_ += '\n';
    flush();
  }

 private:
  static constexpr std::size_t k_chunk = std::size_t{1} << 20;
  template <class T>
  void number(T v) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, r.ptr);
  }
  void flush() {
    stream_.write(out_.data(), static_cast<std::streamsize>(out_.size()));
    out_.clear();
  }
  void open(char c) {
    separate();
    out_ += c;
    first_ = true;
  }
  void close(char c) {
    out_ += c;
    first_ = false;
  }
  void separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_) out_ += ',';
    first_ = false;
  }
  void quote(std::string_view s) {
    out_ += '"';
    std::size_t run = 0;  // start of the pending run of characters that need no escape
    for (std::size_t i = 0; i < s.size(); ++i) {
      const auto c = static_cast<unsigned char>(s[i]);
      const bool surrogate =  // a UTF-16 surrogate (pickles may carry one) is not valid UTF-8
          c == 0xED && i + 2 < s.size() && (static_cast<unsigned char>(s[i + 1]) & 0xE0) == 0xA0;
      if (c >= 0x20 && c != '"' && c != '\\' && !surrogate) continue;
      out_.append(s.data() + run, i - run);
      if (surrogate) {
        const unsigned cp = 0xD000u | ((static_cast<unsigned char>(s[i + 1]) & 0x3Fu) << 6) |
                            (static_cast<unsigned char>(s[i + 2]) & 0x3Fu);
        out_ += fmt::format("\\u{:04x}", cp);
        i += 2;
      } else if (c == '"') {
        out_ += "\\\"";
      } else if (c == '\\') {
        out_ += "\\\\";
      } else if (c == '\n') {
        out_ += "\\n";
      } else {
        out_ += fmt::format("\\u{:04x}", c);
      }
      run = i + 1;
    }
    out_.append(s.data() + run, s.size() - run);
    if (out_.size() > k_chunk) flush();
    out_ += '"';
  }
  std::ostream& stream_;
  std::string out_;
  bool first_ = true;
  bool after_key_ = false;
};

}  // namespace

void write_snapshot_pickle(const snapshot& s, std::ostream& out) {
  pickle_sink sink(out);
  emit(s, sink);
  sink.finish();
  if (!out) throw io_error("writing the snapshot pickle failed");
}

void write_snapshot_json(const snapshot& s, std::ostream& out) {
  json_sink sink(out);
  emit(s, sink);
  sink.finish();
  if (!out) throw io_error("writing the snapshot JSON failed");
}

}  // namespace keel::memory
