#include "keel/random/table_export.hpp"

#include <fmt/format.h>

#include <ostream>

#include "keel/core/error.hpp"
#include "keel/core/output_file.hpp"
#include "keel/random/curand_reference.hpp"
#include "keel/random/erfcinv_tables.hpp"
#include "keel/random/mtgp32_tables.hpp"
#include "keel/random/sobol_tables.hpp"

namespace keel::random {

table_export_result export_table(const table_export_request& request) {
  if (request.sobol + request.mtgp32 + request.erfcinv != 1) {
    throw invalid_argument(
        "export-tables: name one table to export (--sobol, --mtgp32 or --erfcinv)");
  }
  table_export_result result;
  result.path = request.out;
  if (request.sobol) {
    const auto& ref = curand_reference::get();
    if (!ref.available())
      throw backend_error("export-tables --sobol needs libcurand: " + ref.description());
    write_sobol32_scramble_tables(request.out, sobol32_scramble_tables_from_curand());
    result.table = exported_table::sobol;
    result.libcurand = ref.version();
    result.dimensions = k_sobol32_max_dimensions;
  } else if (request.erfcinv) {
    const auto& lookup = erfcinv_default_tables();
    if (!lookup.tables) throw invalid_argument(lookup.description);
    write_output_file(request.out,
                      [&](std::ostream& out) { write_erfcinv_tables(out, *lookup.tables); });
    result.table = exported_table::erfcinv;
  } else {
    const auto& lookup = mtgp32_default_tables();
    if (!lookup.tables) throw invalid_argument(lookup.description);
    write_output_file(request.out,
                      [&](std::ostream& out) { write_mtgp32_tables(out, *lookup.tables); });
    result.table = exported_table::mtgp32;
  }
  return result;
}

std::string to_text(const table_export_result& result) {
  if (result.table != exported_table::sobol) return {};
  return fmt::format("wrote {}: scrambled Sobol32 tables of libcurand {} ({} dimensions)\n",
                     result.path, result.libcurand, result.dimensions);
}

}  // namespace keel::random
