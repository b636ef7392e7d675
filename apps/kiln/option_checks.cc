// Checks of numeric option values whose messages say what the option takes ("--batch: expected
// a whole number >= 1, got '0'"), in place of CLI11's generic ones, which print the full range of
// a double and call a word that is not a number "not in range".
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <sstream>

#include "cli.h"

namespace kiln::cli {
namespace {

// "expected a whole number >= 1", "expected a number from 0 (exclusive) to 100"; a bound at or
// above `unbounded` is left out.
template <class T>
std::string range_text(const char* kind, T min, T max, bool open_min, T unbounded) {
  std::ostringstream os;
  os << "expected " << kind;
  if (max < unbounded)
    os << " from " << min << (open_min ? " (exclusive)" : "") << " to " << max;
  else
    os << (open_min ? " > " : " >= ") << min;
  return os.str();
}

// The whole number `text` spells in decimal with nothing around it, or nothing.
std::optional<long long> parse_whole(const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0) return std::nullopt;
  return v;
}

}  // namespace

CLI::Validator whole_number(int64_t min, int64_t max) {
  const std::string expected =
      range_text<int64_t>("a whole number", min, max, false, std::numeric_limits<int>::max());
  return CLI::Validator(
      [min, max, expected](std::string& text) -> std::string {
        const std::optional<long long> v = parse_whole(text);
        return v && *v >= min && *v <= max ? "" : expected + ", got '" + text + "'";
      },
      "", "whole_number");
}

CLI::Validator real_number(double min, double max, bool open_min) {
  const std::string expected = range_text("a number", min, max, open_min, std::numeric_limits<double>::max());
  return CLI::Validator(
      [min, max, open_min, expected](std::string& text) -> std::string {
        errno = 0;
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        const bool above = open_min ? v > min : v >= min;
        if (text.empty() || *end != '\0' || errno != 0 || !std::isfinite(v) || !above || v > max)
          return expected + ", got '" + text + "'";
        return "";
      },
      "", "real_number");
}

CLI::Validator count_or_all() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::optional<long long> v = parse_whole(text);
        const bool valid = v && (*v == -1 || (*v >= 1 && *v <= std::numeric_limits<int>::max()));
        return valid ? "" : "expected -1 (all) or a whole number >= 1, got '" + text + "'";
      },
      "", "count_or_all");
}

}  // namespace kiln::cli
