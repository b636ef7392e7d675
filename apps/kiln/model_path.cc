// MODEL and its options, and the NAME=VALUE arguments (--shape, --input).
#include <charconv>
#include <iostream>
#include <thread>

#include "cli.h"
#include "kiln/error.hpp"

namespace kiln::cli {

void add_model_args(CLI::App* command, ModelArgs& args, const std::string& default_opt_level) {
  args.opt_level = default_opt_level;
  command->add_option("model", args.model, "NAME-symbol.json, a prefix NAME (with --epoch), or a .onnx file")
      ->required();
  command->add_option("--epoch", args.epoch, "parameter file epoch (default: the highest found)");
  command->add_option("--opt-level", args.opt_level, "graph optimization: none, basic or all")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "basic", "all"}));
  command->add_option("--kernels", args.kernels, "fast (oneDNN where it applies) or reference")
      ->capture_default_str()
      ->check(CLI::IsMember({"fast", "reference"}));
  command->add_option("--precision", args.precision, "fp32, or bf16/fp16 compute in the fast kernels")
      ->capture_default_str()
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
  command->add_option("--threads", args.threads, "threads each op may use (default: all cores)")
      ->check(whole_number(0, kMaxThreads));
}

// Options that are valid alone but mean nothing together are refused rather than ignored.
void check_model_args(const ModelArgs& args) {
  if (args.precision != "fp32" && args.kernels == "reference")
    throw UsageError("--precision " + args.precision +
                     " computes in the fast kernels; --kernels reference runs float32 only");
  const bool onnx = args.model.size() >= 5 && args.model.compare(args.model.size() - 5, 5, ".onnx") == 0;
  if (onnx && args.epoch >= 0)
    throw UsageError("--epoch picks an MXNet parameter file; '" + args.model + "' is an ONNX model");
  if (args.epoch < -1)
    throw UsageError("--epoch: expected an epoch number >= 0, got " + std::to_string(args.epoch));
  const unsigned cores = std::thread::hardware_concurrency();
  if (cores > 0 && args.threads > static_cast<int>(cores))
    std::cerr << "kiln: warning: --threads " << args.threads << " is more than the " << cores
              << " cores here; the extra threads share cores and usually slow each op down\n";
}

Predictor load_model(const ModelArgs& args, const std::map<std::string, Shape>& input_shapes) {
  check_model_args(args);
  PredictorOptions options{.threads = args.threads,
                           .opt_level = args.opt_level,
                           .kernels = args.kernels,
                           .precision = args.precision,
                           .epoch = args.epoch};
  try {
    return Predictor::load(args.model, options);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kUnsupported || input_shapes.empty()) throw;
  }
  options.input_shapes = input_shapes;
  return Predictor::load(args.model, options);
}

namespace {

std::pair<std::string, std::string> split_assignment(const std::string& spec, const char* option) {
  const size_t eq = spec.find('=');
  if (eq == 0 || eq == std::string::npos || eq + 1 == spec.size())
    throw UsageError(std::string(option) + " '" + spec + "': expected NAME=VALUE");
  return {spec.substr(0, eq), spec.substr(eq + 1)};
}

}  // namespace

std::map<std::string, Shape> parse_shapes(const std::vector<std::string>& specs) {
  std::map<std::string, Shape> shapes;
  for (const std::string& spec : specs) {
    const auto [name, dims_text] = split_assignment(spec, "--shape");
    std::vector<int64_t> dims;
    for (size_t pos = 0; pos <= dims_text.size();) {
      const size_t comma = std::min(dims_text.find(',', pos), dims_text.size());
      int64_t d = -1;
      const auto [end, ec] = std::from_chars(dims_text.data() + pos, dims_text.data() + comma, d);
      if (ec != std::errc() || end != dims_text.data() + comma || d < 0)
        throw UsageError("--shape '" + spec + "': expected NAME=D0,D1,... with non-negative integers");
      dims.push_back(d);
      pos = comma + 1;
    }
    if (!shapes.emplace(name, Shape(dims)).second)
      throw UsageError("--shape for input '" + name + "' is given twice");
  }
  return shapes;
}

std::map<std::string, std::string> parse_files(const std::vector<std::string>& specs) {
  std::map<std::string, std::string> files;
  for (const std::string& spec : specs) {
    const auto [name, file] = split_assignment(spec, "--input");
    if (!files.emplace(name, file).second)
      throw UsageError("--input for input '" + name + "' is given twice");
  }
  return files;
}

}  // namespace kiln::cli
