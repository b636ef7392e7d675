// Static post-training INT8 quantization.
//
//   kiln::quantization::QuantizeOptions options{.calib_mode = "entropy"};
//   kiln::graph::Graph int8 = kiln::quantization::quantize_model(
//       std::move(fp32), kiln::quantization::npy_folder_batches("calib/"), options);
//   kiln::Predictor predictor(std::move(int8));            // runs it
//   kiln::quantization::quantize_model_file("resnet50.onnx", "calib/", "resnet50_int8.onnx", options);
//
// The quantized model is a float graph in ONNX's QDQ form: QuantizeLinear -> DequantizeLinear
// pairs on the activations that quantized ops read, and int8 weights (per output channel,
// symmetric) read through DequantizeLinear. The same form is what ONNX Runtime's quantize_static
// writes, so both kinds of model import, run and export alike; graph passes turn the pairs
// around Conv, MatMul and Gemm into int8 kernels.
//
// Calibration runs the float model over batches and keeps, per quantized activation, its range
// and a histogram; a threshold T is chosen per tensor (`naive`: the largest magnitude, `entropy`:
// the T whose clipped 8-bit distribution is closest to the histogram in KL divergence, as MXNet
// and TensorRT choose, `percentile`: the given percentile of magnitudes) and the tensor is
// quantized symmetrically over [-T, T] (int8, scale T/127) or, when it is never negative, over
// [0, T] (uint8, scale T/255).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kiln/ndarray.hpp"
#include "kiln/symbol.hpp"
#include "kiln/tensor.hpp"

namespace kiln {
namespace graph {
class Graph;
}

namespace quantization {

// ---- Calibration statistics ----

enum class CalibMode { kNaive, kEntropy, kPercentile };
// "naive" | "entropy" | "percentile"; anything else is a kiln::Error(kInvalidArgument).
CalibMode parse_calib_mode(const std::string& text);

// The range and a histogram of one tensor's values over every batch seen, as MXNet 1.x collects
// them: `num_bins` (odd) equal bins over [-th, th], th the largest magnitude seen; a batch with
// a larger magnitude widens the histogram by whole bins on both sides, keeping the counts so far.
class TensorStatistics {
 public:
  explicit TensorStatistics(int num_bins = 8001);
  void add(const float* data, int64_t count);
  void add(const Tensor& values);  // float32

  float min() const { return min_; }
  float max() const { return max_; }
  int64_t count() const { return count_; }
  // Bin i counts values in [edges[i], edges[i + 1]); the last bin also counts edges.back().
  const std::vector<double>& histogram() const { return histogram_; }
  std::vector<double> edges() const;

 private:
  int num_bins_;
  float min_ = 0, max_ = 0, th_ = 0;
  int64_t count_ = 0;
  std::vector<double> histogram_;
};

// The largest magnitude, max(|min|, |max|).
float naive_threshold(const TensorStatistics& stats);
// The magnitude below which `percentile` percent (0 < p <= 100) of the values lie, read off the
// histogram (to the upper edge of the bin where it falls).
float percentile_threshold(const TensorStatistics& stats, double percentile);
// MXNet's calibrate_entropy: for each candidate |T| (bin edges outward from the middle bin), the
// histogram clipped to [-T, T] (outliers added to the end bins) is compared in KL divergence with
// its merge into `num_quantized_bins` levels; the T of least divergence. `histogram` has an odd
// number of bins symmetric about 0 and `edges` one more value. `divergence`, when given, receives
// the least divergence.
float entropy_threshold(const std::vector<double>& histogram, const std::vector<double>& edges,
                        int num_quantized_bins = 255, double* divergence = nullptr);
// The threshold of a tensor under a mode: for entropy, 255 levels, or 511 when the tensor is
// never negative and will be quantized to uint8 (its lower half of the histogram is empty).
float threshold(const TensorStatistics& stats, CalibMode mode, bool unsigned_levels,
                double percentile = 99.99);

// ---- Calibration data ----

// Gives the next calibration batch (graph input name -> tensor) and returns true, or returns
// false when there are no more.
using CalibrationBatches = std::function<bool(std::map<std::string, Tensor>& batch)>;
// The .npy files of a folder in name order, one batch each, fed to the model's only input; or,
// when the folder holds subfolders, one batch per subfolder with a file INPUT_NAME.npy per input.
CalibrationBatches npy_folder_batches(const std::string& folder);

// ---- Quantizing a model ----

struct QuantizeOptions {
  std::string calib_mode = "entropy";  // naive | entropy | percentile
  double percentile = 99.99;           // for calib_mode percentile
  int num_bins = 8001;                 // histogram bins (entropy, percentile)
  int num_calib_batches = -1;          // at most this many batches; -1: all
  // The 8-bit type of activations: "auto" (uint8 for tensors never negative in calibration, such
  // as outputs of Relu, int8 otherwise), "int8" (all, symmetric), or "uint8" (all, over [0, T]:
  // negative values become 0, as MXNet's uint8 quantization does; for networks whose quantized
  // activations all follow a Relu).
  std::string activation_dtype = "auto";
  std::vector<std::string> excluded_node_names;  // nodes kept in float
  std::vector<std::string> excluded_op_types;    // ops kept in float ("Gemm", ...)
  bool keep_first_layer_fp32 = false;            // the first Conv/MatMul/Gemm in graph order
  bool keep_last_layer_fp32 = false;             // the last one
  // Weights in 7 bits ([-63, 63], scale max |w| / 63), as ONNX Runtime's reduce_range: on CPUs without
  // VNNI (AVX2) 8-bit kernels add pairs of uint8 x int8 products in int16, which full-range weights
  // can saturate (ONNX Runtime's) or which send the node to the slower exact kernels (Kiln's).
  bool reduce_range = false;
};

// Refuses (kiln::Error, kInvalidArgument) an excluded node name that is no node of `model`, which
// would exclude nothing, naming some of the nodes there are. quantize_model and quantize_dynamic
// check it too; a caller with the model at hand checks before calibrating.
void check_excluded_nodes(const graph::Graph& model, const QuantizeOptions& options);

// The thresholds calibration chose, per activation name (for reports and tests).
struct CalibrationResult {
  std::map<std::string, float> thresholds;
  std::map<std::string, bool> unsigned_tensors;
  int batches = 0;
};

// Quantizes a float model (see the top of this file). The graph is first simplified as the
// Predictor's "all" level does short of fusion (BatchNormalization folded into Conv, identities
// and constants folded). `calibration`, when given, receives what calibration chose.
graph::Graph quantize_model(graph::Graph model, const CalibrationBatches& batches,
                            const QuantizeOptions& options = {}, CalibrationResult* calibration = nullptr);

// Dynamic quantization, for transformer and recurrent models: the weights of MatMul and Gemm
// nodes become int8 per column as above, and each activation they read is quantized on every call
// over its own range (DynamicQuantizeLinear -> DequantizeLinear before it); no calibration.
// `options`' exclusions and first/last flags apply (among MatMul and Gemm nodes).
graph::Graph quantize_dynamic(graph::Graph model, const QuantizeOptions& options = {});
// Loads MODEL, quantizes it dynamically and writes it as ONNX to `output_path`.
void quantize_dynamic_file(const std::string& model_path, const std::string& output_path,
                           const QuantizeOptions& options = {});

// Loads MODEL (as Predictor::load does), quantizes it with the batches in `calib_folder` and
// writes it as ONNX (QDQ) to `output_path`.
CalibrationResult quantize_model_file(const std::string& model_path, const std::string& calib_folder,
                                      const std::string& output_path, const QuantizeOptions& options = {});

// ---- The MXNet-style form (kiln.contrib.quantization.quantize_model) ----

// A quantized symbol and the parameters it reads: int8 weights, float scales, int8/uint8 zero
// points, the float biases; BatchNorm statistics folded into a Conv are gone from aux_params.
struct QuantizedSymbol {
  Symbol symbol;
  std::map<std::string, NDArray> arg_params, aux_params;
};

// quantize_model on a Symbol with MXNet's arg_params and aux_params (names without arg:/aux:).
// `options.excluded_node_names` are MXNet node names (each excludes the Kiln nodes it imports as);
// a name that is no op node of the symbol is a kiln::Error(kInvalidArgument). Without `batches`
// (an empty function) the weights of MatMul and Gemm are quantized dynamically (quantize_dynamic).
// The inputs' shapes are `input_shapes`, else the first batch's with the batch dimension free,
// else the variables' `__shape__`; the quantizer only sees tensors whose rank is known.
// QuantizeLinear and DequantizeLinear come back as `_kiln_` nodes, so the symbol's JSON loads only
// in Kiln; every parameter variable carries `__shape__` and (when not float32) `__dtype__`, which
// Symbol::simple_bind honors.
QuantizedSymbol quantize_symbol(const Symbol& symbol, const std::map<std::string, NDArray>& arg_params,
                                const std::map<std::string, NDArray>& aux_params,
                                const CalibrationBatches& batches, const QuantizeOptions& options = {},
                                const std::map<std::string, Shape>& input_shapes = {},
                                CalibrationResult* calibration = nullptr);

}  // namespace quantization
}  // namespace kiln
