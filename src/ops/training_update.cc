// The optimizer ops of ONNX's ai.onnx.preview.training domain: Adagrad, Momentum (standard and
// Nesterov) and Adam, one step on any number of tensors at once. Inputs are the learning rate R
// and the update count T (scalars), then the n tensors X, their gradients G and their states
// (Adagrad: H; Momentum: V; Adam: V, H), each group in order; outputs are the n new X and then the
// new states, group by group. Each step follows the spec's pseudo code, computed in double.
//
// These are the ONNX forms (the ONNX importer maps that domain's nodes to them); Kiln's MXNet-style
// update ops with their own attributes are in optimizer_update.cc.
#include <cmath>
#include <functional>

#include "attr_validators.h"
#include "core/thread_pool.h"
#include "infer_util.h"

namespace kiln::ops {
namespace {

inline constexpr DType kUpdateDTypes[] = {DType::kFloat32, DType::kFloat64};
inline constexpr DType kCountDTypes[] = {DType::kInt64};

// The number of tensors a node updates: its inputs after R and T come in `groups` groups.
int tensor_count(int num_inputs, int groups, const std::string& op) {
  const int rest = num_inputs - 2;
  KILN_CHECK(rest > 0 && rest % groups == 0, ErrorCode::kInvalidArgument, op, ": expected R, T and then ",
             groups, " groups of n tensors (X, G",
             groups == 4   ? ", V, H"
             : groups == 3 ? ", and a state"
                           : "",
             "), got ", num_inputs, " inputs");
  return rest / groups;
}

std::vector<TensorInfo> infer_update(InferContext& ctx, int groups) {
  const int n = tensor_count(ctx.num_inputs(), groups, ctx.schema().name());
  require_dtype(ctx, 0, kUpdateDTypes);
  require_dtype(ctx, 1, kCountDTypes);
  for (int i : {0, 1})
    KILN_CHECK(ctx.shape(i).numel() == 1 || !ctx.shape(i).is_known(), ErrorCode::kShapeMismatch,
               ctx.input_label(i), ": expected a scalar, got shape ", ctx.shape(i));
  std::vector<TensorInfo> outputs(static_cast<size_t>(n * (groups - 1)));
  for (int t = 0; t < n; ++t) {
    const int x = 2 + t;
    require_dtype(ctx, x, kUpdateDTypes);
    for (int g = 1; g < groups; ++g) {
      const int i = 2 + g * n + t;
      require_same_dtype(ctx, x, i);
      KILN_CHECK(ctx.shape(i) == ctx.shape(x) || !ctx.shape(i).is_known() || !ctx.shape(x).is_known(),
                 ErrorCode::kShapeMismatch, ctx.input_label(i), ": expected the shape of ",
                 ctx.input_label(x), ", ", ctx.shape(x), ", got ", ctx.shape(i));
    }
    for (int g = 0; g < groups - 1; ++g) outputs[static_cast<size_t>(g * n + t)] = ctx.input(x);
  }
  return outputs;
}

// Runs step(r, t, in, out) on every element, where in[] holds X, G and the states of one element
// and out[] receives X_new and the new states.
using ElementStep = std::function<void(double r, int64_t t, const double* in, double* out)>;

void run_update(KernelContext& ctx, int groups, const ElementStep& step) {
  const int n = tensor_count(ctx.num_inputs(), groups, "optimizer update");
  const double r = ctx.input(0).cast(DType::kFloat64).to_vector<double>().at(0);
  const int64_t t = ctx.input(1).to_vector<int64_t>().at(0);
  for (int k = 0; k < n; ++k) {
    std::vector<Tensor> in;
    for (int g = 0; g < groups; ++g) in.push_back(ctx.input(2 + g * n + k).cast(DType::kFloat64));
    std::vector<Tensor> out;
    for (int g = 0; g < groups - 1; ++g) out.push_back(Tensor::empty(in[0].shape(), DType::kFloat64));
    parallel_for(0, in[0].numel(), 1 << 14, [&](int64_t begin, int64_t end) {
      double values[4], results[3];
      for (int64_t e = begin; e < end; ++e) {
        for (int g = 0; g < groups; ++g) values[g] = in[static_cast<size_t>(g)].data<double>()[e];
        step(r, t, values, results);
        for (int g = 0; g < groups - 1; ++g) out[static_cast<size_t>(g)].data<double>()[e] = results[g];
      }
    });
    for (int g = 0; g < groups - 1; ++g) {
      Tensor& y = ctx.output(g * n + k);
      y.copy_from(out[static_cast<size_t>(g)].cast(y.dtype()));
    }
  }
}

void validate_momentum_mode(const AttrValue& value, const std::string& what) {
  one_of({"standard", "nesterov"})(value, what);
}

KILN_REGISTER_OP(Adagrad)
    .doc(
        "ai.onnx.preview.training: r = R / (1 + T decay_factor); G' = norm_coefficient X + G; H_new = H + "
        "G'^2; "
        "X_new = X - r G' / (sqrt(H_new) + epsilon). Inputs R, T, X..., G..., H...; outputs X_new..., "
        "H_new....")
    .input("R")
    .input("T")
    .input("inputs", Arity::kVariadic)
    .output("outputs", Arity::kVariadic)
    .attr("decay_factor", AttrType::kFloat, 0.0)
    .attr("epsilon", AttrType::kFloat, 1e-6)
    .attr("norm_coefficient", AttrType::kFloat, 0.0)
    .infer([](InferContext& ctx) { return infer_update(ctx, 3); })
    .kernel([](KernelContext& ctx) {
      const double decay = ctx.attrs.get_float("decay_factor"), epsilon = ctx.attrs.get_float("epsilon"),
                   norm = ctx.attrs.get_float("norm_coefficient");
      run_update(ctx, 3, [=](double r, int64_t t, const double* in, double* out) {
        const double rate = r / (1 + static_cast<double>(t) * decay);
        const double g = norm * in[0] + in[1];
        const double h = in[2] + g * g;
        out[0] = in[0] - rate * g / (std::sqrt(h) + epsilon);
        out[1] = h;
      });
    });

KILN_REGISTER_OP(Momentum)
    .doc(
        "ai.onnx.preview.training: G' = norm_coefficient X + G; V_new = alpha V + (T > 0 ? beta : 1) G'; "
        "X_new = X - R V_new (standard) or X - R (G' + alpha V_new) (nesterov). Inputs R, T, X..., G..., "
        "V...; "
        "outputs X_new..., V_new....")
    .input("R")
    .input("T")
    .input("inputs", Arity::kVariadic)
    .output("outputs", Arity::kVariadic)
    .required_attr("alpha", AttrType::kFloat)
    .required_attr("beta", AttrType::kFloat)
    .required_attr("mode", AttrType::kString, validate_momentum_mode)
    .required_attr("norm_coefficient", AttrType::kFloat)
    .infer([](InferContext& ctx) { return infer_update(ctx, 3); })
    .kernel([](KernelContext& ctx) {
      const double alpha = ctx.attrs.get_float("alpha"), beta = ctx.attrs.get_float("beta"),
                   norm = ctx.attrs.get_float("norm_coefficient");
      const bool nesterov = ctx.attrs.get_string("mode") == "nesterov";
      run_update(ctx, 3, [=](double r, int64_t t, const double* in, double* out) {
        const double g = norm * in[0] + in[1];
        const double v = alpha * in[2] + (t > 0 ? beta : 1.0) * g;
        out[0] = in[0] - r * (nesterov ? g + alpha * v : v);
        out[1] = v;
      });
    });

KILN_REGISTER_OP(Adam)
    .doc(
        "ai.onnx.preview.training: G' = norm_coefficient X + G; V_new = alpha V + (1 - alpha) G'; H_new = "
        "beta H "
        "+ (1 - beta) G'^2; r = T > 0 ? R sqrt(1 - beta^T) / (1 - alpha^T) : R; X_new = (1 - "
        "norm_coefficient_post) (X - r V_new / (sqrt(H_new) + epsilon)). Inputs R, T, X..., G..., V..., "
        "H...; "
        "outputs X_new..., V_new..., H_new....")
    .input("R")
    .input("T")
    .input("inputs", Arity::kVariadic)
    .output("outputs", Arity::kVariadic)
    .attr("alpha", AttrType::kFloat, 0.9)
    .attr("beta", AttrType::kFloat, 0.999)
    .attr("epsilon", AttrType::kFloat, 1e-6)
    .attr("norm_coefficient", AttrType::kFloat, 0.0)
    .attr("norm_coefficient_post", AttrType::kFloat, 0.0)
    .infer([](InferContext& ctx) { return infer_update(ctx, 4); })
    .kernel([](KernelContext& ctx) {
      const double alpha = ctx.attrs.get_float("alpha"), beta = ctx.attrs.get_float("beta"),
                   epsilon = ctx.attrs.get_float("epsilon"), norm = ctx.attrs.get_float("norm_coefficient"),
                   post = ctx.attrs.get_float("norm_coefficient_post");
      run_update(ctx, 4, [=](double r, int64_t t, const double* in, double* out) {
        const double g = norm * in[0] + in[1];
        const double v = alpha * in[2] + (1 - alpha) * g;
        const double h = beta * in[3] + (1 - beta) * g * g;
        const double td = static_cast<double>(t);
        const double rate = t > 0 ? r * std::sqrt(1 - std::pow(beta, td)) / (1 - std::pow(alpha, td)) : r;
        out[0] = (1 - post) * (in[0] - rate * v / (std::sqrt(h) + epsilon));
        out[1] = v;
        out[2] = h;
      });
    });

}  // namespace
}  // namespace kiln::ops
