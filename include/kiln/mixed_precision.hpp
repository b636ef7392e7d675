// Mixed precision: a graph whose float32 tensors are bfloat16 or float16, with float32 islands
// for the ops that lose too much in a 16-bit type.
//
//   kiln::mixed_precision::MixedPrecisionReport report;
//   kiln::graph::Graph bf16 = kiln::mixed_precision::convert_float(std::move(fp32), {}, &report);
//   kiln::Predictor predictor(std::move(bf16));   // oneDNN kernels compute on the bf16 tensors
//
// Each node runs in the low type unless it is an fp32 node: its op type or name is on the block
// list (numerically sensitive ops: Softmax, normalizations, reductions, Exp/Log/Pow/Sqrt, Resize,
// NMS, TopK, ...; the int8 ops and the QDQ pairs), it lies on a path from a DequantizeLinear to a
// QuantizeLinear or reads the one or feeds the other (what becomes an int8 kernel, with its
// activation and residual, keeps float32 and no Cast enters an int8 chain), or its op does not take
// the low type (the op's type inference refuses it, or leaves a float32 output float32), or the
// registered fast kernels (oneDNN) take the node in float32 but not in the low type (fp16 on CPUs
// without AVX512-FP16), unless `fast_kernels_only` is off (a file for another runtime); a node they
// take in neither type (Reshape, Slice, ...) follows its inputs: low when they all come low. Float32
// initializers that low nodes read become low-type initializers; a Cast goes wherever a value
// crosses from one precision to the other (one per value and direction, shared by its readers).
// Graph inputs and outputs keep float32 (a Cast at entry and exit, as onnxconverter-common's
// keep_io_types does) and their names. The result is a plain ONNX graph: it exports, ONNX
// Runtime runs the float16 form, and Kiln runs both.
#pragma once

#include <string>
#include <vector>

#include "kiln/dtype.hpp"

namespace kiln {
namespace graph {
class Graph;
}

namespace mixed_precision {

struct MixedPrecisionOptions {
  DType low_type = DType::kBFloat16;  // kBFloat16 or kFloat16
  // Added to default_fp32_ops(): op types, and node names, that stay float32.
  std::vector<std::string> fp32_op_types;
  std::vector<std::string> fp32_node_names;
  // Keep float32 the nodes that have a fast kernel in float32 and none in the low type. Off:
  // decide by the ops' schemas alone, for a model meant for another runtime.
  bool fast_kernels_only = true;
};

// The op types kept in float32 unless the caller says otherwise.
const std::vector<std::string>& default_fp32_ops();

// "bf16" | "fp16" -> the low type; anything else is a kiln::Error(kInvalidArgument).
DType parse_low_type(const std::string& text);

struct MixedPrecisionReport {
  int low_nodes = 0;                    // nodes computing in the low type
  std::vector<std::string> fp32_nodes;  // labels of the nodes with float tensors kept in float32
  int casts = 0;                        // Cast nodes inserted
  int converted_initializers = 0;       // float32 initializers stored in the low type
};

// Converts `model` (see the top of this file). A name in `options.fp32_node_names` that is no
// node of the graph, or a low type other than bfloat16 and float16, is a kiln::Error.
graph::Graph convert_float(graph::Graph model, const MixedPrecisionOptions& options = {},
                           MixedPrecisionReport* report = nullptr);

}  // namespace mixed_precision
}  // namespace kiln
