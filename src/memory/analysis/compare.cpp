// What changed between two snapshots: include/keel/memory/compare.hpp.
#include "keel/memory/compare.hpp"
#include "keel/core/enum_names.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <ostream>
#include <set>
#include <tuple>

#include "keel/core/bytes.hpp"
#include "keel/core/error.hpp"

namespace keel::memory {
namespace {

// How many segments are only in A, only in B or resized, and the bytes of the first two.
struct segment_tally {
  std::size_t only_a = 0, only_b = 0, resized = 0;
  std::uint64_t bytes_only_a = 0, bytes_only_b = 0;
};
segment_tally tally(const std::vector<segment_change>& changes) {
  segment_tally t;
  for (const segment_change& s : changes) {
    if (s.kind == segment_change_kind::only_a) {
      ++t.only_a;
      t.bytes_only_a += s.size_a;
    } else if (s.kind == segment_change_kind::only_b) {
      ++t.only_b;
      t.bytes_only_b += s.size_b;
    } else {
      ++t.resized;
    }
  }
  return t;
}

std::uint64_t magnitude(std::int64_t d) {
  return d < 0 ? static_cast<std::uint64_t>(-(d + 1)) + 1 : static_cast<std::uint64_t>(d);
}

std::int64_t difference(std::uint64_t a, std::uint64_t b) {
  return static_cast<std::int64_t>(b - a);
}

std::string signed_size(std::int64_t d) {
  if (d == 0) return "+0";
  return (d < 0 ? "-" : "+") + format_size(magnitude(d));
}

std::string signed_count(std::int64_t d) { return d == 0 ? "+0" : fmt::format("{:+}", d); }

std::uint64_t live_bytes(const snapshot_segment& seg) {
  std::uint64_t live = 0;
  for (const snapshot_block& b : seg.blocks) {
    if (b.state != block_state::inactive) live += b.size;
  }
  return live;
}

std::set<int> devices_with_data(const snapshot& s) {
  std::set<int> out;
  for (const snapshot_segment& seg : s.segments) out.insert(seg.device);
  for (std::size_t d = 0; d < s.device_traces.size(); ++d) {
    if (!s.device_traces[d].empty()) out.insert(static_cast<int>(d));
  }
  return out;
}

bool selected(const std::optional<int>& device, int d) { return !device || *device == d; }

std::vector<live_allocation> live_of(const snapshot& s, const std::set<int>& devices) {
  std::vector<live_allocation> out;
  for (int d : devices) {
    std::vector<live_allocation> v = live_allocations(s, d);
    out.insert(out.end(), std::make_move_iterator(v.begin()), std::make_move_iterator(v.end()));
  }
  return out;
}

std::string pool_text(const std::pair<std::int64_t, std::int64_t>& p) {
  return fmt::format("({},{})", p.first, p.second);
}

nlohmann::json totals_json(const device_totals& t) {
  return {{"reserved", t.reserved},   {"allocated", t.allocated}, {"live", t.live},
          {"requested", t.requested}, {"segments", t.segments},   {"blocks", t.blocks}};
}

}  // namespace

namespace {
constexpr enum_entry<change_kind> k_change_kind_entries[] = {
    {change_kind::added, "added"},
    {change_kind::grown, "grown"},
    {change_kind::shrunk, "shrunk"},
    {change_kind::removed, "removed"},
};
constexpr enum_names<change_kind> k_change_kind_names{"change kind", k_change_kind_entries,
                                                      name_case::exact, "grown"};
}  // namespace

std::string_view to_string(change_kind kind) noexcept { return k_change_kind_names.name(kind); }

namespace {
constexpr enum_entry<segment_change_kind> k_segment_change_kind_entries[] = {
    {segment_change_kind::only_a, "only_a"},
    {segment_change_kind::only_b, "only_b"},
    {segment_change_kind::resized, "resized"},
};
constexpr enum_names<segment_change_kind> k_segment_change_kind_names{
    "segment change kind", k_segment_change_kind_entries, name_case::exact, "only_a"};
}  // namespace

std::string_view to_string(segment_change_kind kind) noexcept {
  return k_segment_change_kind_names.name(kind);
}

device_totals totals_of(const snapshot& s, int device) {
  device_totals t;
  for (const snapshot_segment& seg : s.segments) {
    if (seg.device != device) continue;
    t.reserved += seg.total_size;
    ++t.segments;
    for (const snapshot_block& b : seg.blocks) {
      if (b.state == block_state::inactive) continue;
      if (b.state == block_state::active_allocated) t.allocated += b.size;
      t.live += b.size;
      t.requested += b.requested_size;
      ++t.blocks;
    }
  }
  return t;
}

snapshot_diff compare_snapshots(const snapshot& a, const snapshot& b,
                                const compare_options& options) {
  snapshot_diff diff;
  diff.name_a = options.name_a;
  diff.name_b = options.name_b;
  diff.device = options.device;

  std::set<int> devices = devices_with_data(a);
  devices.merge(devices_with_data(b));
  if (options.device) {
    if (!devices.contains(*options.device)) {
      throw invalid_argument(fmt::format(
          "device {} has no segments or trace entries in either snapshot", *options.device));
    }
    devices = {*options.device};
  }
  for (int d : devices) diff.devices.push_back({d, totals_of(a, d), totals_of(b, d)});

  // Call sites.
  callsite_options all;
  all.top = 0;
  const callsite_summary sa = summarize_callsites(live_of(a, devices), all);
  const callsite_summary sb = summarize_callsites(live_of(b, devices), all);
  diff.category_a = sa.category_bytes;
  diff.category_b = sb.category_bytes;
  std::map<std::pair<std::string, memory_category>, site_change> rows;
  // One row per (site, category) of either side; each side fills its own bytes and count.
  const auto add_side = [&rows](const callsite_summary& side, std::uint64_t site_change::*bytes,
                                std::uint64_t site_change::*count) {
    for (const callsite& c : side.sites) {
      site_change& r = rows[{c.site, c.category}];
      r.site = c.site;
      r.module = c.module;
      r.category = c.category;
      r.*bytes = c.bytes;
      r.*count = c.count;
      r.frames = c.frames;
    }
  };
  add_side(sa, &site_change::bytes_a, &site_change::count_a);
  add_side(sb, &site_change::bytes_b, &site_change::count_b);
  for (auto& [key, r] : rows) {
    if (r.bytes_a == r.bytes_b && r.count_a == r.count_b) {
      ++diff.sites_unchanged;
      continue;
    }
    if (r.count_a == 0) {
      r.kind = change_kind::added;
    } else if (r.count_b == 0) {
      r.kind = change_kind::removed;
    } else if (r.bytes_b != r.bytes_a) {
      r.kind = r.bytes_b > r.bytes_a ? change_kind::grown : change_kind::shrunk;
    } else {
      r.kind = r.count_b > r.count_a ? change_kind::grown : change_kind::shrunk;
    }
    diff.sites.push_back(std::move(r));
  }
  std::sort(diff.sites.begin(), diff.sites.end(), [](const site_change& x, const site_change& y) {
    const std::uint64_t dx = magnitude(x.delta()), dy = magnitude(y.delta());
    if (dx != dy) return dx > dy;
    const std::uint64_t cx = magnitude(difference(x.count_a, x.count_b));
    const std::uint64_t cy = magnitude(difference(y.count_a, y.count_b));
    if (cx != cy) return cx > cy;
    return std::tie(x.site, x.category) < std::tie(y.site, y.category);
  });

  // Segments and pools.
  std::map<std::pair<int, std::uint64_t>, const snapshot_segment*> in_a;
  using pool_key = std::tuple<int, std::uint64_t, std::pair<std::int64_t, std::int64_t>>;
  std::map<pool_key, pool_change> pools;
  for (const snapshot_segment& seg : a.segments) {
    if (!selected(options.device, seg.device)) continue;
    in_a[{seg.device, seg.address}] = &seg;
    pool_change& p = pools[{seg.device, seg.stream, seg.pool_id}];
    p.reserved_a += seg.total_size;
    p.live_a += live_bytes(seg);
    ++p.segments_a;
  }
  const auto change_of = [](segment_change_kind kind, const snapshot_segment& seg) {
    segment_change c;
    c.kind = kind;
    c.device = seg.device;
    c.address = seg.address;
    c.stream = seg.stream;
    c.pool_id = seg.pool_id;
    c.is_large = seg.is_large;
    c.is_expandable = seg.is_expandable;
    return c;
  };
  std::set<std::pair<int, std::uint64_t>> matched;
  for (const snapshot_segment& seg : b.segments) {
    if (!selected(options.device, seg.device)) continue;
    pool_change& p = pools[{seg.device, seg.stream, seg.pool_id}];
    p.reserved_b += seg.total_size;
    p.live_b += live_bytes(seg);
    ++p.segments_b;
    const auto found = in_a.find({seg.device, seg.address});
    if (found == in_a.end()) {
      segment_change c = change_of(segment_change_kind::only_b, seg);
      c.size_b = seg.total_size;
      c.live_b = live_bytes(seg);
      diff.segments.push_back(c);
      continue;
    }
    matched.insert(found->first);
    if (found->second->total_size == seg.total_size) {
      ++diff.segments_same;
      continue;
    }
    segment_change c = change_of(segment_change_kind::resized, seg);
    c.size_a = found->second->total_size;
    c.live_a = live_bytes(*found->second);
    c.size_b = seg.total_size;
    c.live_b = live_bytes(seg);
    diff.segments.push_back(c);
  }
  for (const auto& [key, seg] : in_a) {
    if (matched.contains(key)) continue;
    segment_change c = change_of(segment_change_kind::only_a, *seg);
    c.size_a = seg->total_size;
    c.live_a = live_bytes(*seg);
    diff.segments.push_back(c);
  }
  std::sort(diff.segments.begin(), diff.segments.end(),
            [](const segment_change& x, const segment_change& y) {
              const std::uint64_t dx = magnitude(x.delta()), dy = magnitude(y.delta());
              if (dx != dy) return dx > dy;
              return std::tie(x.device, x.address) < std::tie(y.device, y.address);
            });
  for (auto& [key, p] : pools) {
    p.device = std::get<0>(key);
    p.stream = std::get<1>(key);
    p.pool_id = std::get<2>(key);
    diff.pools.push_back(p);
  }
  return diff;
}

nlohmann::json to_json(const snapshot_diff& diff, std::size_t top) {
  const auto cut = [top](std::size_t n) { return top == 0 ? n : std::min(n, top); };
  nlohmann::json j;
  j["a"] = diff.name_a;
  j["b"] = diff.name_b;
  j["device"] = diff.device ? nlohmann::json(*diff.device) : nlohmann::json(nullptr);

  nlohmann::json devices = nlohmann::json::array();
  for (const device_change& d : diff.devices) {
    devices.push_back({{"device", d.device},
                       {"a", totals_json(d.a)},
                       {"b", totals_json(d.b)},
                       {"delta",
                        {{"reserved", difference(d.a.reserved, d.b.reserved)},
                         {"allocated", difference(d.a.allocated, d.b.allocated)},
                         {"live", difference(d.a.live, d.b.live)},
                         {"requested", difference(d.a.requested, d.b.requested)}}}});
  }
  j["devices"] = devices;

  nlohmann::json categories = nlohmann::json::array();
  for (std::size_t c = 0; c < k_memory_categories; ++c) {
    if (diff.category_a[c] == 0 && diff.category_b[c] == 0) continue;
    categories.push_back({{"category", std::string(to_string(static_cast<memory_category>(c)))},
                          {"a", diff.category_a[c]},
                          {"b", diff.category_b[c]},
                          {"delta", difference(diff.category_a[c], diff.category_b[c])}});
  }
  j["categories"] = categories;

  nlohmann::json site_rows = nlohmann::json::array();
  for (std::size_t i = 0; i < cut(diff.sites.size()); ++i) {
    const site_change& s = diff.sites[i];
    site_rows.push_back({{"site", s.site},
                         {"module", s.module},
                         {"category", std::string(to_string(s.category))},
                         {"change", std::string(to_string(s.kind))},
                         {"bytes_a", s.bytes_a},
                         {"bytes_b", s.bytes_b},
                         {"delta", s.delta()},
                         {"count_a", s.count_a},
                         {"count_b", s.count_b}});
  }
  j["sites"] = {
      {"changed", diff.sites.size()}, {"unchanged", diff.sites_unchanged}, {"rows", site_rows}};

  const auto [only_a, only_b, resized, bytes_only_a, bytes_only_b] = tally(diff.segments);
  nlohmann::json segment_rows = nlohmann::json::array();
  for (std::size_t i = 0; i < cut(diff.segments.size()); ++i) {
    const segment_change& s = diff.segments[i];
    segment_rows.push_back({{"change", std::string(to_string(s.kind))},
                            {"device", s.device},
                            {"address", s.address},
                            {"stream", s.stream},
                            {"pool_id", {s.pool_id.first, s.pool_id.second}},
                            {"segment_type", s.is_large ? "large" : "small"},
                            {"expandable", s.is_expandable},
                            {"size_a", s.size_a},
                            {"size_b", s.size_b},
                            {"delta", s.delta()},
                            {"live_a", s.live_a},
                            {"live_b", s.live_b}});
  }
  j["segments"] = {{"only_a", only_a},
                   {"only_b", only_b},
                   {"resized", resized},
                   {"same", diff.segments_same},
                   {"bytes_only_a", bytes_only_a},
                   {"bytes_only_b", bytes_only_b},
                   {"rows", segment_rows}};

  nlohmann::json pools = nlohmann::json::array();
  for (const pool_change& p : diff.pools) {
    pools.push_back({{"device", p.device},
                     {"stream", p.stream},
                     {"pool_id", {p.pool_id.first, p.pool_id.second}},
                     {"reserved_a", p.reserved_a},
                     {"reserved_b", p.reserved_b},
                     {"delta", difference(p.reserved_a, p.reserved_b)},
                     {"live_a", p.live_a},
                     {"live_b", p.live_b},
                     {"segments_a", p.segments_a},
                     {"segments_b", p.segments_b}});
  }
  j["pools"] = pools;
  return j;
}

void write_compare_text(std::ostream& out, const snapshot_diff& diff, std::size_t top) {
  const auto cut = [top](std::size_t n) { return top == 0 ? n : std::min(n, top); };
  const auto change = [](std::uint64_t a, std::uint64_t b) {
    return fmt::format("{:>11} -> {:<11} {:>12}", format_size(a), format_size(b),
                       signed_size(difference(a, b)));
  };
  const auto count_change = [](std::uint64_t a, std::uint64_t b) {
    return fmt::format("{} -> {} ({})", a, b, signed_count(difference(a, b)));
  };
  out << fmt::format("A: {}\nB: {}{}\n", diff.name_a, diff.name_b,
                     diff.device ? fmt::format("  (device {})", *diff.device) : std::string());
  for (const device_change& d : diff.devices) {
    out << fmt::format("device {}  reserved  {}   segments    {}\n", d.device,
                       change(d.a.reserved, d.b.reserved),
                       count_change(d.a.segments, d.b.segments));
    out << fmt::format("          allocated {}   live blocks {}\n",
                       change(d.a.allocated, d.b.allocated), count_change(d.a.blocks, d.b.blocks));
    out << fmt::format("          live      {}   requested   {} -> {}\n",
                       change(d.a.live, d.b.live), format_size(d.a.requested),
                       format_size(d.b.requested));
  }

  // The categories that changed, wrapped at about 100 columns.
  std::string line = "live bytes by category:";
  bool any = false;
  for (std::size_t c = 0; c < k_memory_categories; ++c) {
    if (diff.category_a[c] == diff.category_b[c]) continue;
    const std::string item =
        fmt::format(" {} {}{}", to_string(static_cast<memory_category>(c)),
                    signed_size(difference(diff.category_a[c], diff.category_b[c])), ",");
    if (any && line.size() + item.size() > 100) {
      out << line << "\n";
      line = "                       ";
    }
    line += item;
    any = true;
  }
  if (any) out << line.substr(0, line.size() - 1) << "\n";

  out << fmt::format("\ncall sites: {} changed, {} unchanged{}\n", diff.sites.size(),
                     diff.sites_unchanged,
                     diff.sites.size() > cut(diff.sites.size())
                         ? fmt::format(" (largest {} shown)", cut(diff.sites.size()))
                         : std::string());
  for (std::size_t i = 0; i < cut(diff.sites.size()); ++i) {
    const site_change& s = diff.sites[i];
    out << fmt::format("  {:>12}  {:<7}  {:<15}  {}  ({} -> {}, {} -> {} blocks)\n",
                       signed_size(s.delta()), to_string(s.kind), to_string(s.category), s.site,
                       format_size(s.bytes_a), format_size(s.bytes_b), s.count_a, s.count_b);
  }

  const auto [only_a, only_b, resized, bytes_only_a, bytes_only_b] = tally(diff.segments);
  out << fmt::format("\nsegments: {} only in A ({}), {} only in B ({}), {} resized, {} the same\n",
                     only_a, format_size(bytes_only_a), only_b, format_size(bytes_only_b), resized,
                     diff.segments_same);
  for (std::size_t i = 0; i < cut(diff.segments.size()); ++i) {
    const segment_change& s = diff.segments[i];
    const char* what = s.kind == segment_change_kind::only_a   ? "only A"
                       : s.kind == segment_change_kind::only_b ? "only B"
                                                               : "resized";
    out << fmt::format(
        "  {:>12}  {:<7}  device {} {:#x}  stream {} pool {} {}{}  {} -> {} (live {} -> {})\n",
        signed_size(s.delta()), what, s.device, s.address, s.stream, pool_text(s.pool_id),
        s.is_large ? "large" : "small", s.is_expandable ? " expandable" : "", format_size(s.size_a),
        format_size(s.size_b), format_size(s.live_a), format_size(s.live_b));
  }

  if (!diff.pools.empty()) out << "\nreserved by stream and pool:\n";
  for (std::size_t i = 0; i < cut(diff.pools.size()); ++i) {
    const pool_change& p = diff.pools[i];
    out << fmt::format("  device {} stream {} pool {}  {}   segments {}\n", p.device, p.stream,
                       pool_text(p.pool_id), change(p.reserved_a, p.reserved_b),
                       count_change(p.segments_a, p.segments_b));
  }
  if (diff.pools.size() > cut(diff.pools.size())) {
    out << fmt::format("  ({} more)\n", diff.pools.size() - cut(diff.pools.size()));
  }
}

}  // namespace keel::memory
