// Graphs the MXNet exporter is checked on, built with the graph API as an ONNX importer would
// build them. Shared by test_mxnet_export.cc (export, import back, compare in Kiln) and the
// mxnet_export tool (export, then real MXNet runs the files: mxnet_export.py).
#pragma once

#include <random>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "random_tensor.h"

namespace kiln::mxnet::testing {

using graph::Graph;
using graph::Value;
using ops::TensorInfo;

using kiln::testing::random_tensor;

inline Value* ints(Graph& g, const std::string& name, const std::vector<int64_t>& values) {
  return g.add_initializer(name, Tensor::from_vector(values, Shape{static_cast<int64_t>(values.size())}));
}

inline Value* scalar(Graph& g, const std::string& name, float value) {
  return g.add_initializer(name, Tensor::full(Shape{}, value, DType::kFloat32));
}

inline Value* op(Graph& g, const std::string& type, std::vector<Value*> inputs, AttrMap attrs = {},
                 const std::string& name = "") {
  return g.add_node(type, std::move(inputs), std::move(attrs), name)->outputs[0];
}

// data (batch, 3, 8, 8) -> Conv+BN+Relu -> MaxPool -> Flatten -> Gemm -> Softmax: (batch, 10).
inline Graph conv_net(std::mt19937& rng, int64_t batch = 1) {
  Graph g;
  g.name = "conv_net";
  Value* x = g.add_input("data", TensorInfo{DType::kFloat32, Shape{batch, 3, 8, 8}});
  Value* w = g.add_initializer("conv_w", random_tensor({4, 3, 3, 3}, rng, -0.5f, 0.5f));
  Value* b = g.add_initializer("conv_b", random_tensor({4}, rng, -0.1f, 0.1f));
  Value* y = op(g, "Conv", {x, w, b}, {{"kernel_shape", {3, 3}}, {"pads", {1, 1, 1, 1}}}, "conv");
  y = op(g, "BatchNormalization",
         {y, g.add_initializer("bn_scale", random_tensor({4}, rng, 0.5f, 1.5f)),
          g.add_initializer("bn_bias", random_tensor({4}, rng, -0.1f, 0.1f)),
          g.add_initializer("bn_mean", random_tensor({4}, rng, -0.1f, 0.1f)),
          g.add_initializer("bn_var", random_tensor({4}, rng, 0.5f, 1.5f))},
         {{"epsilon", 1e-4}}, "bn");
  y = op(g, "Relu", {y}, {}, "relu");
  y = op(g, "MaxPool", {y}, {{"kernel_shape", {2, 2}}, {"strides", {2, 2}}}, "pool");
  y = op(g, "Flatten", {y}, {{"axis", 1}}, "flatten");
  y = op(g, "Gemm",
         {y, g.add_initializer("fc_w", random_tensor({10, 64}, rng, -0.2f, 0.2f)),
          g.add_initializer("fc_b", random_tensor({10}, rng, -0.1f, 0.1f))},
         {{"transB", 1}}, "fc");
  g.set_outputs({op(g, "Softmax", {y}, {{"axis", -1}}, "softmax")});
  return g;
}

// x (2, 4, 6, 6) through every op the exporter writes as an MXNet op, in forms an ONNX model
// has (bias-free and transposed weights, 0-d constants, ceil-mode pooling, ...). Each result is
// flattened and all are concatenated into output 0; output 1 is one part of a Split, output 2 the
// maximum of everything.
inline Graph onnx_mix(std::mt19937& rng) {
  Graph g;
  g.name = "onnx_mix";
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{2, 4, 6, 6}});
  const auto w = [&](const std::string& name, const Shape& shape, float lo = -0.5f, float hi = 0.5f) {
    return g.add_initializer(name, random_tensor(shape, rng, lo, hi));
  };
  std::vector<Value*> parts;
  parts.push_back(op(g, "Conv", {x, w("conv_w", {4, 2, 3, 3})},
                     {{"strides", {2, 2}}, {"pads", {1, 1, 1, 1}}, {"group", 2}}, "conv"));
  parts.push_back(op(g, "ConvTranspose", {x, w("deconv_w", {4, 3, 2, 2}), w("deconv_b", {3})},
                     {{"strides", {2, 2}}, {"output_padding", {1, 1}}}, "deconv"));
  parts.push_back(op(g, "AveragePool", {x},
                     {{"kernel_shape", {3, 3}},
                      {"strides", {2, 2}},
                      {"pads", {1, 1, 1, 1}},
                      {"ceil_mode", 1},
                      {"count_include_pad", 1}},
                     "avg_ceil"));
  parts.push_back(op(g, "AveragePool", {x}, {{"kernel_shape", {2, 2}}, {"pads", {1, 1, 1, 1}}}, "avg_pad"));
  parts.push_back(
      op(g, "MaxPool", {x}, {{"kernel_shape", {3, 3}}, {"strides", {2, 2}}, {"ceil_mode", 1}}, "max_ceil"));
  parts.push_back(op(g, "GlobalAveragePool", {x}, {}, "gap"));
  parts.push_back(op(g, "GlobalMaxPool", {x}, {}, "gmp"));
  parts.push_back(op(g, "LeakyRelu", {x}, {{"alpha", 0.2}}, "leaky"));
  parts.push_back(op(g, "Elu", {x}, {{"alpha", 0.5}}, "elu"));
  parts.push_back(op(g, "Selu", {x}, {}, "selu"));
  parts.push_back(op(g, "Gelu", {x}, {}, "gelu"));
  for (const char* type : {"Relu", "Sigmoid", "Tanh", "Softplus", "Softsign", "Identity"})
    parts.push_back(op(g, type, {x}));
  parts.push_back(op(g, "PRelu", {x, w("slope", {4, 1, 1}, 0.f, 0.5f)}, {}, "prelu"));
  parts.push_back(op(g, "Softmax", {x}, {{"axis", 1}}, "softmax"));
  parts.push_back(op(g, "LogSoftmax", {x}, {{"axis", -1}}, "log_softmax"));
  parts.push_back(op(
      g, "BatchNormalization",
      {x, w("bn_scale", {4}, 0.5f, 1.5f), w("bn_bias", {4}), w("bn_mean", {4}), w("bn_var", {4}, 0.5f, 1.5f)},
      {{"epsilon", 1e-3}}, "bn"));
  // Arithmetic with 0-d constants (MXNet's _X_scalar ops) and with broadcast arrays.
  parts.push_back(op(g, "Add", {x, scalar(g, "half", 0.5f)}, {}, "plus_scalar"));
  parts.push_back(op(g, "Sub", {scalar(g, "three", 3.f), x}, {}, "rminus_scalar"));
  parts.push_back(op(g, "Div",
                     {scalar(g, "two", 2.f), op(g, "Add", {op(g, "Mul", {x, x}), scalar(g, "one", 1.f)})}, {},
                     "rdiv_scalar"));
  parts.push_back(op(g, "Pow",
                     {op(g, "Add", {op(g, "Mul", {x, x}), scalar(g, "tenth", 0.1f)}), scalar(g, "p", 1.5f)},
                     {}, "power_scalar"));
  parts.push_back(op(g, "Div", {x, w("divisor", {1, 4, 1, 1}, 1.f, 2.f)}, {}, "broadcast_div"));
  parts.push_back(op(g, "Max", {x, w("floor", {6}, -0.2f, 0.2f)}, {}, "broadcast_max"));
  parts.push_back(op(g, "Min", {x, scalar(g, "cap", 0.3f)}, {}, "minimum_scalar"));
  parts.push_back(op(g, "Clip", {x, scalar(g, "lo", -0.3f), scalar(g, "hi", 0.4f)}, {}, "clip"));
  parts.push_back(op(g, "Clip", {x, nullptr, scalar(g, "hi2", 0.2f)}, {}, "clip_max"));
  parts.push_back(
      op(g, "Slice", {x, ints(g, "s0", {1}), ints(g, "e0", {100}), ints(g, "a0", {2})}, {}, "slice_end"));
  parts.push_back(
      op(g, "Slice", {x, ints(g, "s1", {-4}), ints(g, "e1", {-1}), ints(g, "a1", {-1})}, {}, "slice_neg"));
  Value* mean = op(g, "ReduceMean", {x, ints(g, "axes23", {2, 3})}, {{"keepdims", 0}}, "mean");
  parts.push_back(mean);
  parts.push_back(
      op(g, "Squeeze",
         {op(g, "Unsqueeze", {mean, ints(g, "axis1", {1})}, {}, "unsqueeze"), ints(g, "axis1b", {1})}, {},
         "squeeze"));
  parts.push_back(op(g, "ReduceSum", {x, ints(g, "axis1c", {1})}, {{"keepdims", 1}}, "sum"));
  parts.push_back(op(g, "ReduceMin", {x, ints(g, "axis_last", {-1})}, {{"keepdims", 0}}, "min_last"));
  parts.push_back(op(g, "Transpose", {x}, {{"perm", {0, 2, 3, 1}}}, "transpose"));
  parts.push_back(op(g, "Reshape", {x, ints(g, "shape", {0, -1, 6})}, {}, "reshape"));
  parts.push_back(op(g, "Cast", {op(g, "Cast", {x}, {{"to", dtype_to_onnx(DType::kFloat16)}}, "to_half")},
                     {{"to", dtype_to_onnx(DType::kFloat32)}}, "to_float"));
  parts.push_back(op(g, "Sum", {x, x, op(g, "Mul", {x, scalar(g, "minus_two", -2.f)})}, {}, "add_n"));
  parts.push_back(op(g, "Dropout", {x}, {}, "dropout"));
  graph::Node* split = g.add_node("Split", {x}, {{"axis", 1}, {"num_outputs", 2}}, "split", 2);
  parts.push_back(split->outputs[0]);
  Value* flat = op(g, "Flatten", {x}, {{"axis", 1}}, "flat");
  parts.push_back(op(g, "Gemm", {flat, w("gemm_w", {144, 5}, -0.1f, 0.1f), w("gemm_c", {1, 5})}, {}, "gemm"));
  parts.push_back(op(g, "Gemm", {flat, w("fc_w", {5, 144}, -0.1f, 0.1f)}, {{"transB", 1}}, "fc_no_bias"));
  parts.push_back(op(g, "MatMul", {x, w("matmul_w", {6, 3})}, {}, "dot"));
  parts.push_back(op(g, "MatMul", {x, op(g, "Transpose", {x}, {{"perm", {0, 1, 3, 2}}})}, {}, "batch_dot"));
  std::vector<Value*> flats;
  for (Value* p : parts) flats.push_back(op(g, "Flatten", {p}, {{"axis", 1}}));
  g.set_outputs({op(g, "Concat", flats, {{"axis", 1}}, "all"), split->outputs[1],
                 op(g, "ReduceMax", {x}, {{"keepdims", 1}}, "max_all")});
  return g;
}

}  // namespace kiln::mxnet::testing
