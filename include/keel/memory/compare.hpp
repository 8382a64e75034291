// compare — what changed between two memory snapshots A and B (`keel mem compare A B`).
//
// torch.cuda._memory_viz's compare lists the segments only in the snapshot before and only in
// the one after (keyed by address and size). This adds what a user asks first: per device the
// reserved, allocated and live bytes of each and the difference; which call sites hold more or
// less live memory (call sites and categories as in callsites.hpp, so a site's row is the same
// in both snapshots even when they come from different machines); the segments only in A, only
// in B or resized; and the reserved bytes per (device, stream, pool).
//
// A snapshot_diff holds every changed row; presentation (write_compare_text, to_json) cuts
// the lists to `top` rows. Pure functions of their inputs; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "keel/memory/callsites.hpp"
#include "keel/memory/snapshot.hpp"

namespace keel::memory {

// One device's state at the end of a snapshot.
struct device_totals {
  std::uint64_t reserved = 0;   // sum of segment total_size
  std::uint64_t allocated = 0;  // sum of active_allocated block sizes
  std::uint64_t live = 0;       // allocated + active_pending_free block sizes (live_allocations)
  std::uint64_t requested = 0;  // requested bytes of those blocks
  std::size_t segments = 0;
  std::size_t blocks = 0;  // live blocks
  friend bool operator==(const device_totals&, const device_totals&) = default;
};
device_totals totals_of(const snapshot& s, int device);

struct device_change {
  int device = 0;
  device_totals a, b;  // zeros where that snapshot has nothing on the device
};

enum class change_kind { added, grown, shrunk, removed };
std::string_view to_string(change_kind kind) noexcept;

// A call site (row key: site and category) whose live bytes or count differ.
struct site_change {
  std::string site;
  std::string module;
  memory_category category = memory_category::unknown;
  change_kind kind = change_kind::grown;  // grown/shrunk by bytes (by count when bytes are equal)
  std::uint64_t bytes_a = 0, bytes_b = 0;
  std::uint64_t count_a = 0, count_b = 0;
  frame_stack frames;  // a stack of the site (B's when B has it)
  std::int64_t delta() const noexcept { return static_cast<std::int64_t>(bytes_b - bytes_a); }
};

enum class segment_change_kind { only_a, only_b, resized };
std::string_view to_string(segment_change_kind kind) noexcept;

// Segments are matched by (device, address). resized: the same address with another size (an
// expandable segment that grew or shrank, or a segment freed and re-created there).
struct segment_change {
  segment_change_kind kind = segment_change_kind::only_a;
  int device = 0;
  std::uint64_t address = 0;
  std::uint64_t stream = 0;
  std::pair<std::int64_t, std::int64_t> pool_id{0, 0};
  bool is_large = true;
  bool is_expandable = false;
  std::uint64_t size_a = 0, size_b = 0;  // 0 where absent
  std::uint64_t live_a = 0, live_b = 0;  // live block bytes inside it
  std::int64_t delta() const noexcept { return static_cast<std::int64_t>(size_b - size_a); }
};

// Reserved memory per (device, stream, pool), every key present in either snapshot.
struct pool_change {
  int device = 0;
  std::uint64_t stream = 0;
  std::pair<std::int64_t, std::int64_t> pool_id{0, 0};
  std::uint64_t reserved_a = 0, reserved_b = 0;
  std::uint64_t live_a = 0, live_b = 0;
  std::size_t segments_a = 0, segments_b = 0;
};

struct snapshot_diff {
  std::string name_a, name_b;
  std::optional<int> device;           // the device compared; empty: every device
  std::vector<device_change> devices;  // ascending device
  std::vector<site_change> sites;      // by |delta| descending, then count change, then site
  std::size_t sites_unchanged = 0;
  std::array<std::uint64_t, k_memory_categories> category_a{}, category_b{};  // live bytes
  std::vector<segment_change> segments;  // by |delta| descending, then device and address
  std::size_t segments_same = 0;         // same address and size in both
  std::vector<pool_change> pools;        // by device, stream, pool
};

struct compare_options {
  std::optional<int> device;               // compare only this device (sites, segments, pools)
  std::string name_a = "A", name_b = "B";  // how the text and JSON name the two snapshots
};

// Throws keel::invalid_argument when options.device has no segments and no trace entries in
// either snapshot.
snapshot_diff compare_snapshots(const snapshot& a, const snapshot& b,
                                const compare_options& options = {});

// One document: {"a","b","device","devices":[{device, a:{reserved,allocated,live,requested,
// segments,blocks}, b:{…}, delta:{reserved,allocated,live,requested}}], "categories":[{category,
// a,b,delta}], "sites":{"changed","unchanged","rows":[{site,module,category,change,bytes_a,
// bytes_b,delta,count_a,count_b}]}, "segments":{"only_a","only_b","resized","same",
// "bytes_only_a","bytes_only_b","rows":[{change,device,address,stream,pool_id,segment_type,
// expandable,size_a,size_b,delta,live_a,live_b}]}, "pools":[{device,stream,pool_id,reserved_a,
// reserved_b,delta,live_a,live_b,segments_a,segments_b}]}. `top` cuts the site and segment rows
// (0 keeps all); the counts are always over every row.
nlohmann::json to_json(const snapshot_diff& diff, std::size_t top = 0);

// The same for a terminal, about one screen with the default top.
void write_compare_text(std::ostream& out, const snapshot_diff& diff, std::size_t top = 10);

}  // namespace keel::memory
