// Checks of option values made before any work starts: numbers, with messages that say what the
// option takes ("--batch: expected a whole number >= 1, got '0'") in place of CLI11's generic
// ones, which print the full range of a double and call a word that is not a number "not in
// range"; and output paths, so that a long run is not thrown away for a file it cannot write.
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <optional>
#include <sstream>

#include "cli.h"

#include <unistd.h>

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

void prepare_output(const std::string& path, const std::string& option, const std::string& model) {
  namespace fs = std::filesystem;
  const fs::path out(path);
  std::error_code ec;
  if (fs::is_directory(out, ec)) throw UsageError(option + " '" + path + "' is a folder; give a file name");
  // The model as given, or the symbol file an MXNet prefix names.
  for (const fs::path& in : {fs::path(model), fs::path(model + "-symbol.json")})
    if (fs::exists(in, ec) && fs::exists(out, ec) && fs::equivalent(in, out, ec))
      throw UsageError(option + " '" + path + "' is the input model; write the result elsewhere");
  const fs::path folder = out.has_parent_path() ? out.parent_path() : fs::path(".");
  fs::create_directories(folder, ec);
  if (ec)
    throw UsageError(option + " '" + path + "': cannot create the folder '" + folder.string() +
                     "': " + ec.message());
  if (::access(folder.c_str(), W_OK) != 0)
    throw UsageError(option + " '" + path + "': the folder '" + folder.string() + "' is not writable");
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
