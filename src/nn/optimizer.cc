// The Optimizer base class: per-parameter update counts, learning rate and weight decay with
// their multipliers, state creation, the checks that name the parameter, and clip_global_norm.
#include "kiln/nn/optimizer.hpp"

#include <cmath>

namespace kiln::nn {

namespace {

bool is_16bit(DType d) {
  return d == DType::kFloat16 || d == DType::kBFloat16;
}

void check_learning_rate(double lr, const std::string& what) {
  KILN_CHECK(std::isfinite(lr) && lr >= 0, ErrorCode::kInvalidArgument, what,
             ": the learning rate must be finite and >= 0, got ", lr);
}

}  // namespace

Optimizer::Optimizer(std::string name, OptimizerOptions options)
    : name_(std::move(name)), options_(std::move(options)), num_update_(options_.begin_num_update) {
  const std::string what = name_ + " optimizer";
  if (!options_.lr_scheduler) check_learning_rate(options_.learning_rate, what);
  KILN_CHECK(std::isfinite(options_.wd), ErrorCode::kInvalidArgument, what, ": wd must be finite, got ",
             options_.wd);
  KILN_CHECK(std::isfinite(options_.rescale_grad), ErrorCode::kInvalidArgument, what,
             ": rescale_grad must be finite, got ", options_.rescale_grad);
  KILN_CHECK(options_.begin_num_update >= 0, ErrorCode::kInvalidArgument, what,
             ": begin_num_update must be >= 0, got ", options_.begin_num_update);
}

OptimizerState Optimizer::create_state(int index, const NDArray& weight) const {
  KILN_CHECK(weight.defined() && is_floating(weight.dtype()), ErrorCode::kTypeMismatch, name_,
             " optimizer, parameter ", index, ": expected a float weight, got ",
             weight.defined() ? dtype_name(weight.dtype()) : "an undefined array");
  OptimizerState state;
  const bool master = options_.multi_precision && is_16bit(weight.dtype());
  if (master) state.weight32 = weight.astype(DType::kFloat32);
  const DType state_dtype = master ? DType::kFloat32 : weight.dtype();
  for (int i = 0; i < num_states(); ++i) state.arrays.push_back(nd::zeros(weight.shape(), state_dtype));
  return state;
}

void Optimizer::check_fits(int index, const NDArray& weight, const NDArray& grad,
                           const OptimizerState& state) const {
  const std::string where = name_ + " optimizer, parameter " + std::to_string(index);
  KILN_CHECK(weight.defined() && is_floating(weight.dtype()), ErrorCode::kTypeMismatch, where,
             ": expected a float weight, got ",
             weight.defined() ? dtype_name(weight.dtype()) : "an undefined array");
  KILN_CHECK(grad.defined(), ErrorCode::kInvalidArgument, where, ": the gradient is undefined");
  KILN_CHECK(grad.shape() == weight.shape(), ErrorCode::kShapeMismatch, where, ": the gradient has shape ",
             grad.shape(), ", the weight ", weight.shape());
  KILN_CHECK(grad.dtype() == weight.dtype(), ErrorCode::kTypeMismatch, where, ": the gradient has dtype ",
             grad.dtype(), ", the weight ", weight.dtype());
  const bool master = options_.multi_precision && is_16bit(weight.dtype());
  KILN_CHECK(master == state.weight32.defined(), ErrorCode::kInvalidArgument, where,
             master
                 ? ": multi_precision needs a float32 master copy in the state (use create_state)"
                 : ": the state holds a master copy, which only a 16-bit weight under multi_precision uses");
  if (master)
    KILN_CHECK(state.weight32.shape() == weight.shape() && state.weight32.dtype() == DType::kFloat32,
               ErrorCode::kShapeMismatch, where, ": the master copy is ", state.weight32.dtype(), " ",
               state.weight32.shape(), ", expected float32 ", weight.shape());
  KILN_CHECK(static_cast<int>(state.arrays.size()) == num_states(), ErrorCode::kInvalidArgument, where,
             ": expected ", num_states(), " state arrays, got ", state.arrays.size(),
             " (a state made by another optimizer?)");
  const DType state_dtype = master ? DType::kFloat32 : weight.dtype();
  for (size_t i = 0; i < state.arrays.size(); ++i) {
    const NDArray& s = state.arrays[i];
    KILN_CHECK(s.defined() && s.shape() == weight.shape() && s.dtype() == state_dtype,
               ErrorCode::kShapeMismatch, where, ": state array ", i, " is ",
               s.defined() ? dtype_name(s.dtype()) : "undefined", " ", s.defined() ? s.shape() : Shape{},
               ", expected ", state_dtype, " ", weight.shape(), " (a state made for another parameter?)");
  }
}

void Optimizer::update(int index, const NDArray& weight, const NDArray& grad, OptimizerState& state) {
  check_fits(index, weight, grad, state);
  const auto count = update_count_.find(index);
  const int64_t t = (count == update_count_.end() ? options_.begin_num_update : count->second) + 1;
  const int64_t num_update = std::max(num_update_, t);
  const double base_lr =
      options_.lr_scheduler ? (*options_.lr_scheduler)(num_update) : options_.learning_rate;
  const auto lr_mult = lr_mult_.find(index), wd_mult = wd_mult_.find(index);
  const Step s{index, base_lr * (lr_mult == lr_mult_.end() ? 1.0 : lr_mult->second),
               options_.wd * (wd_mult == wd_mult_.end() ? 1.0 : wd_mult->second), t};
  const std::string where = name_ + " optimizer, parameter " + std::to_string(index);
  check_learning_rate(s.lr, where);
  try {
    step(s, weight, grad, state.arrays, state.weight32);
  } catch (const Error& e) {
    throw Error(e.code(), where + ": " + e.what());
  }
  update_count_[index] = t;
  num_update_ = num_update;
}

void Optimizer::set_lr_mult(int index, double mult) {
  KILN_CHECK(std::isfinite(mult) && mult >= 0, ErrorCode::kInvalidArgument, name_, " optimizer, parameter ",
             index, ": lr_mult must be finite and >= 0, got ", mult);
  lr_mult_[index] = mult;
}

void Optimizer::set_wd_mult(int index, double mult) {
  KILN_CHECK(std::isfinite(mult), ErrorCode::kInvalidArgument, name_, " optimizer, parameter ", index,
             ": wd_mult must be finite, got ", mult);
  wd_mult_[index] = mult;
}

double Optimizer::learning_rate() const {
  return options_.lr_scheduler ? (*options_.lr_scheduler)(num_update_) : options_.learning_rate;
}

void Optimizer::set_learning_rate(double lr) {
  KILN_CHECK(!options_.lr_scheduler, ErrorCode::kInvalidArgument, name_,
             " optimizer: the learning rate comes from its schedule and cannot be set");
  check_learning_rate(lr, name_ + " optimizer");
  options_.learning_rate = lr;
}

int64_t Optimizer::update_count(int index) const {
  const auto it = update_count_.find(index);
  return it == update_count_.end() ? options_.begin_num_update : it->second;
}

AttrMap Optimizer::common_attrs(const Step& s) const {
  return {{"lr", s.lr},
          {"wd", s.wd},
          {"rescale_grad", options_.rescale_grad},
          {"clip_gradient", options_.clip_gradient}};
}

void Optimizer::run_update_op(const std::string& op, const NDArray& weight, const NDArray& grad,
                              const std::vector<NDArray>& states, const NDArray& weight32,
                              const AttrMap& attrs) {
  std::vector<NDArray> inputs{weight, grad};
  std::vector<NDArray> outputs{weight};
  inputs.insert(inputs.end(), states.begin(), states.end());
  outputs.insert(outputs.end(), states.begin(), states.end());
  if (weight32.defined()) {
    inputs.push_back(weight32);
    outputs.push_back(weight32);
  }
  nd::invoke_into(op, inputs, outputs, attrs);
}

double clip_global_norm(const std::vector<NDArray>& arrays, double max_norm) {
  KILN_CHECK(std::isfinite(max_norm) && max_norm > 0, ErrorCode::kInvalidArgument,
             "clip_global_norm: max_norm must be finite and > 0, got ", max_norm);
  double sum_sq = 0;
  for (size_t i = 0; i < arrays.size(); ++i) {
    const NDArray& a = arrays[i];
    KILN_CHECK(a.defined() && is_floating(a.dtype()), ErrorCode::kTypeMismatch, "clip_global_norm: array ", i,
               ": expected a float array, got ", a.defined() ? dtype_name(a.dtype()) : "an undefined one");
    // Summed in float64 so that 16-bit gradients cannot overflow the sum.
    sum_sq += nd::invoke1("ReduceSumSquare", {a.astype(DType::kFloat64)}, {{"keepdims", 0}}).tensor().item();
  }
  const double norm = std::sqrt(sum_sq);
  if (!std::isfinite(norm)) return norm;
  const double scale = max_norm / (norm + 1e-8);
  if (scale < 1)
    for (const NDArray& a : arrays) {
      NDArray target = a;
      target *= scale;
    }
  return norm;
}

}  // namespace kiln::nn
