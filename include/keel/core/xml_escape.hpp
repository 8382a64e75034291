// xml_escape — text made safe to place inside XML/HTML/SVG text or a quoted attribute.
//
// Replaces &, <, > and " with their entities and leaves every other byte as it is (UTF-8
// passes through). Used by every report that writes SVG or HTML. Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace keel {

std::string xml_escape(std::string_view text);

}  // namespace keel
