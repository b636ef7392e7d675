// What the oneDNN kernel tests share: random inputs, and `compare`, which runs one node with the
// reference kernels and with oneDNN's and checks that the outputs agree and that oneDNN really
// ran the node (the plan names the provider), so a silent fallback to the reference kernels
// cannot pass for a working fast kernel.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "backends/onednn/cpu_features.h"
#include "random_tensor.h"
#include "runtime/executor.h"
#include "runtime/kernel_provider.h"
#include "runtime/plan.h"

namespace kiln::onednn {

inline const runtime::KernelProvider* onednn_provider() {
  for (const runtime::KernelProvider* p : runtime::registered_kernel_providers())
    if (p->name() == "onednn") return p;
  return nullptr;
}

using kiln::testing::random_tensor;

// The provider that must take a node over `dtype` data: oneDNN where it computes that type on
// this CPU (bfloat16 needs AVX-512, float16 AVX512-FP16: cpu_features.h), else the reference
// kernels, since oneDNN's primitives refuse the type.
inline std::string provider_for(DType dtype) {
  if (dtype == DType::kBFloat16) return cpu_computes_bf16() ? "onednn" : "reference";
  if (dtype == DType::kFloat16) return cpu_computes_f16() ? "onednn" : "reference";
  return "onednn";
}

// The provider that must take an 8-bit convolution or matmul over a `source` activation whose
// weights lie in [-64, 63]: oneDNN, but the reference kernels for an s8 source on a CPU without VNNI,
// where oneDNN's result would not be exact (int8_products_exact).
inline std::string int8_provider(DType source) {
  return cpu_has_int8_dot_product() || source == DType::kUInt8 ? "onednn" : "reference";
}

// Comparisons that cannot run on this CPU: where oneDNN does not compute a type here, the
// reference kernels take the node on both sides, and comparing them with themselves would pass
// for a check. Such a comparison checks only that oneDNN declined the node, and is counted here
// as not run; the count is printed once, when the test program ends.
class ComparisonsNotRun : public ::testing::Environment {
 public:
  static void add(const std::string& reason) { ++counts()[reason]; }
  void TearDown() override {
    for (const auto& [reason, count] : counts())
      std::cout << "[ NOT RUN  ] " << count << " oneDNN comparisons: " << reason
                << "; only the fallback to the reference kernels was checked\n";
  }

 private:
  static std::map<std::string, int>& counts() {
    static std::map<std::string, int> by_reason;
    return by_reason;
  }
};
inline const bool kComparisonsNotRunReported =
    (::testing::AddGlobalTestEnvironment(new ComparisonsNotRun), true);  // gtest owns it

// One input of the node under test: fed at run time, or a constant (an initializer). An
// undefined value is a missing optional input.
struct Operand {
  Tensor value;
  bool constant = false;
};

struct CompareOptions {
  // The provider the plan must name for the node; nullopt: either (a dtype oneDNN computes only
  // on some CPUs).
  std::optional<std::string> provider = "onednn";
  // Allowed difference: tolerance * max |reference| over the output (sums may be reordered), or,
  // with `per_element`, tolerance * (1 + |reference|) for each element (functions whose values
  // span many magnitudes). NaN must meet NaN, an infinity the same infinity.
  double tolerance = 1e-5;
  bool per_element = false;
  int num_outputs = 1;  // the node's outputs, all compared
};

// Why oneDNN cannot take a node reading `operands` on this CPU, or "" when it can.
inline std::string cpu_lacks(const std::vector<Operand>& operands) {
  for (const Operand& o : operands) {
    if (!o.value.defined()) continue;
    if (o.value.dtype() == DType::kFloat16 && !cpu_computes_f16())
      return "float16 (oneDNN computes it with AVX512-FP16, which this CPU lacks)";
    if (o.value.dtype() == DType::kBFloat16 && !cpu_computes_bf16())
      return "bfloat16 (oneDNN computes it with AVX-512 or AVX-NE-CONVERT, which this CPU lacks)";
    if (o.value.dtype() == DType::kInt8 && !cpu_has_int8_dot_product())
      return "int8 sources (exact in oneDNN only with VNNI, which this CPU lacks)";
  }
  return "";
}

// Runs `op` once with the reference kernels and once with oneDNN's and compares the outputs.
inline void compare(const std::string& op, const AttrMap& attrs, const std::vector<Operand>& operands,
                    const CompareOptions& options) {
  const runtime::KernelProvider* provider = onednn_provider();
  ASSERT_NE(provider, nullptr) << "the oneDNN provider is not registered";
  graph::Graph g;
  std::vector<graph::Value*> inputs;
  std::vector<Tensor> feed;
  for (size_t i = 0; i < operands.size(); ++i) {
    const std::string name = "in" + std::to_string(i);
    if (!operands[i].value.defined()) {
      inputs.push_back(nullptr);
    } else if (operands[i].constant) {
      inputs.push_back(g.add_initializer(name, operands[i].value));
    } else {
      inputs.push_back(
          g.add_input(name, ops::TensorInfo{operands[i].value.dtype(), operands[i].value.shape()}));
      feed.push_back(operands[i].value);
    }
  }
  graph::Node* node = g.add_node(op, inputs, attrs, "node", options.num_outputs);
  for (graph::Value* out : node->outputs) g.add_output(out);
  g.infer_shapes();
  const auto reference_plan = runtime::compile(g);
  const auto fast_plan = runtime::compile(g, {.providers = {provider}});
  if (options.provider) {
    ASSERT_EQ(fast_plan->steps.at(0).provider, *options.provider) << op;
  }
  if (fast_plan->steps.at(0).provider == "reference") {
    if (const std::string reason = cpu_lacks(operands); !reason.empty()) {
      ComparisonsNotRun::add(reason);
      return;
    }
  }
  const std::vector<Tensor> want = runtime::Executor(reference_plan).run(feed);
  const std::vector<Tensor> got = runtime::Executor(fast_plan).run(feed);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    ASSERT_EQ(got[k].shape(), want[k].shape());
    ASSERT_EQ(got[k].dtype(), want[k].dtype());
    const auto a = got[k].cast(DType::kFloat32).to_vector<float>();
    const auto b = want[k].cast(DType::kFloat32).to_vector<float>();
    double scale = 1e-6;
    for (float v : b)
      if (std::isfinite(v)) scale = std::max(scale, static_cast<double>(std::fabs(v)));
    for (size_t i = 0; i < a.size(); ++i) {
      const std::string where = op + " output " + std::to_string(k) + " element " + std::to_string(i) +
                                " of " + std::to_string(a.size());
      if (std::isnan(b[i]) || std::isinf(b[i])) {
        ASSERT_TRUE(std::isnan(b[i]) ? std::isnan(a[i]) : a[i] == b[i])
            << where << ": got " << a[i] << ", want " << b[i];
        continue;
      }
      const double allowed =
          options.tolerance * (options.per_element ? 1.0 + std::fabs(static_cast<double>(b[i])) : scale);
      ASSERT_NEAR(a[i], b[i], allowed) << where;
    }
  }
}

// The common case: float32 at the default tolerance; `expect_onednn`: oneDNN must take the node
// (else the reference kernel must).
inline void compare(const std::string& op, const AttrMap& attrs, const std::vector<Operand>& operands,
                    bool expect_onednn = true) {
  compare(op, attrs, operands, CompareOptions{.provider = expect_onednn ? "onednn" : "reference"});
}

}  // namespace kiln::onednn
