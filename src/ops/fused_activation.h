// The activations a fused op (FusedConv, FusedGemm, FusedMatMul) applies to its result, named
// after the ONNX op they stand for ("Relu", "LeakyRelu", ...) plus "SiLU" for x * sigmoid(x),
// with the op's attributes as `activation_params` in a fixed order:
//   LeakyRelu [alpha]   Elu [alpha]   HardSigmoid [alpha, beta]   Clip [min, max]
//   Relu, Sigmoid, Tanh, HardSwish, SiLU, Gelu, GeluTanh: none
// One definition serves the reference kernels and the backends' post-op mappings.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "kiln/error.hpp"

namespace kiln::ops {

enum class Activation {
  kNone,
  kRelu,
  kLeakyRelu,
  kElu,
  kSigmoid,
  kHardSigmoid,
  kTanh,
  kClip,
  kHardSwish,
  kSiLU,
  kGelu,
  kGeluTanh
};

struct FusedActivation {
  Activation kind = Activation::kNone;
  double alpha = 0, beta = 0;  // the parameters, in the order above

  // Computed in double: exact enough for every dtype, float64 included.
  double operator()(double x) const {
    switch (kind) {
      case Activation::kNone:
        return x;
      case Activation::kRelu:
        return x > 0 ? x : 0;
      case Activation::kLeakyRelu:
        return x >= 0 ? x : alpha * x;
      case Activation::kElu:
        return x >= 0 ? x : alpha * std::expm1(x);
      case Activation::kSigmoid:
        return 1 / (1 + std::exp(-x));
      case Activation::kHardSigmoid:
        return std::fmax(0.0, std::fmin(1.0, alpha * x + beta));
      case Activation::kTanh:
        return std::tanh(x);
      case Activation::kClip:
        return std::fmin(std::fmax(x, alpha), beta);
      case Activation::kHardSwish:
        return x * std::fmax(0.0, std::fmin(1.0, x / 6 + 0.5));
      case Activation::kSiLU:
        return x / (1 + std::exp(-x));
      case Activation::kGelu:
        return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
      case Activation::kGeluTanh:
        return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    }
    return x;
  }
};

// Parses `activation` ("" for none) and its parameters; throws kInvalidArgument naming the
// activation for an unknown name or a wrong number of parameters.
inline FusedActivation parse_fused_activation(const std::string& name, const std::vector<double>& params) {
  struct Known {
    const char* name;
    Activation kind;
    size_t num_params;
  };
  static const Known known[] = {
      {"", Activation::kNone, 0},
      {"Relu", Activation::kRelu, 0},
      {"LeakyRelu", Activation::kLeakyRelu, 1},
      {"Elu", Activation::kElu, 1},
      {"Sigmoid", Activation::kSigmoid, 0},
      {"HardSigmoid", Activation::kHardSigmoid, 2},
      {"Tanh", Activation::kTanh, 0},
      {"Clip", Activation::kClip, 2},
      {"HardSwish", Activation::kHardSwish, 0},
      {"SiLU", Activation::kSiLU, 0},
      {"Gelu", Activation::kGelu, 0},
      {"GeluTanh", Activation::kGeluTanh, 0},
  };
  for (const Known& k : known) {
    if (name != k.name) continue;
    KILN_CHECK(params.size() == k.num_params, ErrorCode::kInvalidArgument, "activation '", name, "' takes ",
               k.num_params, " activation_params, got ", params.size());
    FusedActivation a{k.kind};
    if (!params.empty()) a.alpha = params[0];
    if (params.size() > 1) a.beta = params[1];
    return a;
  }
  raise(ErrorCode::kInvalidArgument, "unknown activation '", name,
        "' (known: Relu, LeakyRelu, Elu, Sigmoid, HardSigmoid, Tanh, Clip, HardSwish, SiLU, Gelu, GeluTanh)");
}

}  // namespace kiln::ops
