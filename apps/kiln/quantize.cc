// kiln quantize MODEL --calib DIR -o OUT.onnx [--mode entropy|naive|percentile] [--percentile P]
// [--batches N] [--activations auto|int8|uint8] [--exclude NAME]... [--exclude-op OP]...
// [--keep-first] [--keep-last]: static INT8 quantization (include/kiln/quantize.hpp). Calibrates
// on the .npy batches in DIR (one file per batch for a model with one input, or one folder per
// batch with a file INPUT_NAME.npy per input) and writes the quantized model as QDQ ONNX, which
// Kiln runs with its int8 kernels and ONNX Runtime runs as it is. With --dynamic instead of
// --calib: dynamic quantization of MatMul and Gemm (int8 weights, activations quantized per call).
#include <algorithm>
#include <iostream>
#include <memory>

#include "cli.h"
#include "deploy/model_loading.h"
#include "frontends/onnx/export.h"
#include "kiln/quantize.hpp"
#include "progress.h"

namespace kiln::cli {
namespace {

struct QuantizeArgs {
  std::string model, calib, out;
  bool dynamic = false;
  quantization::QuantizeOptions options;
};

void quantize(const QuantizeArgs& args) {
  prepare_output(args.out, "-o", args.model);
  if (args.dynamic == !args.calib.empty())
    throw UsageError("give either --calib DIR (static quantization) or --dynamic");
  graph::Graph model = deploy::load_graph(args.model);
  try {
    quantization::check_excluded_nodes(model, args.options);
  } catch (const Error& e) {
    throw UsageError(std::string("--exclude: ") + e.what());
  }
  if (args.dynamic) {
    onnx::export_model(quantization::quantize_dynamic(std::move(model), args.options), args.out);
    std::cout << "wrote " << args.out << " (ONNX, dynamic quantization of MatMul and Gemm)\n";
    return;
  }
  quantization::CalibrationResult result;
  quantization::CalibrationBatches batches = quantization::npy_folder_batches(args.calib);
  int64_t total = count_batches(args.calib);
  if (args.options.num_calib_batches > 0) total = std::min<int64_t>(total, args.options.num_calib_batches);
  auto bar = std::make_shared<ProgressBar>("calibration", total);
  const graph::Graph quantized = quantization::quantize_model(
      std::move(model), with_progress(std::move(batches), bar), args.options, &result);
  bar.reset();  // ends the bar's line before the summary
  onnx::export_model(quantized, args.out);
  size_t unsigned_count = 0;
  for (const auto& [name, is_unsigned] : result.unsigned_tensors) unsigned_count += is_unsigned;
  std::cout << "calibrated on " << result.batches << (result.batches == 1 ? " batch" : " batches") << " ("
            << args.options.calib_mode << "): " << result.thresholds.size() << " activations quantized ("
            << unsigned_count << " uint8, " << result.thresholds.size() - unsigned_count << " int8)\n"
            << "wrote " << args.out << " (ONNX, QDQ)\n";
}

}  // namespace

void add_quantize_command(CLI::App& app) {
  auto args = std::make_shared<QuantizeArgs>();
  CLI::App* cmd =
      app.add_subcommand("quantize", "static INT8 quantization with calibration data, to QDQ ONNX");
  cmd->add_option("model", args->model, "NAME-symbol.json, a prefix NAME, or a .onnx file")->required();
  cmd->add_option("--calib", args->calib, "folder of .npy calibration batches");
  CLI::Option* dynamic = cmd->add_flag(
      "--dynamic", args->dynamic,
      "dynamic quantization of MatMul and Gemm (activations quantized on each call), no --calib");
  cmd->add_option("-o,--output", args->out, "the quantized model, OUT.onnx")->required();
  // The calibration options mean nothing to dynamic quantization, which calibrates nothing.
  cmd->add_option("--mode", args->options.calib_mode,
                  "calibration: entropy (KL), naive (min/max) or percentile")
      ->capture_default_str()
      ->check(CLI::IsMember({"entropy", "naive", "percentile"}))
      ->excludes(dynamic);
  cmd->add_option("--percentile", args->options.percentile, "for --mode percentile")
      ->capture_default_str()
      ->check(real_number(0.0, 100.0, true))
      ->excludes(dynamic);
  cmd->add_option("--batches", args->options.num_calib_batches, "use at most N batches (-1: all)")
      ->capture_default_str()
      ->check(count_or_all())
      ->excludes(dynamic);
  cmd->add_option(
         "--activations", args->options.activation_dtype,
         "8-bit type of activations: auto (uint8 where never negative), int8, or uint8 (negatives become 0)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "int8", "uint8"}))
      ->excludes(dynamic);
  cmd->add_option("--exclude", args->options.excluded_node_names, "keep this node in float (repeatable)");
  cmd->add_option("--exclude-op", args->options.excluded_op_types,
                  "keep nodes of this op in float (repeatable)");
  cmd->add_flag("--keep-first", args->options.keep_first_layer_fp32,
                "keep the first Conv/MatMul/Gemm in float");
  cmd->add_flag("--keep-last", args->options.keep_last_layer_fp32, "keep the last Conv/MatMul/Gemm in float");
  cmd->add_flag("--reduce-range", args->options.reduce_range,
                "7-bit weights: exact on the int8 kernels of CPUs without VNNI (AVX2)");
  cmd->callback([args] { quantize(*args); });
}

}  // namespace kiln::cli
