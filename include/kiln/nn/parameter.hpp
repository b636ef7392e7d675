// Gluon parameters (MXNet 1.x mx.gluon.Parameter and ParameterDict): a named, trainable array
// with its gradient buffer, initializer, grad_req and learning-rate / weight-decay multipliers.
//
// A dimension of 0 in a parameter's shape is unknown. Initializing such a parameter is deferred:
// the initializer is remembered, and the block that owns the parameter completes the shape from
// its first input and finishes the initialization before it computes anything (Gluon's deferred
// initialization).
//
//   nn::Parameter w("dense0_weight", {.shape = {10, 0}});
//   w.initialize(std::make_shared<nn::Xavier>());   // deferred: in_units is still unknown
//   w.set_shape({10, 64});
//   w.finish_deferred_init();                       // now w.data() is (10, 64), drawn by Xavier
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/ndarray.hpp"
#include "kiln/nn/initializer.hpp"

namespace kiln::nn {

struct ParameterOptions {
  Shape shape;  // 0 for a dimension known only at the first forward pass
  DType dtype = DType::kFloat32;
  // The parameter's own initializer (Gluon's `init=`); null: the one given to initialize().
  std::shared_ptr<const Initializer> init;
  GradReq grad_req = GradReq::kWrite;
  double lr_mult = 1, wd_mult = 1;
  bool allow_deferred_init = true;
};

class Parameter {
 public:
  Parameter(std::string name, ParameterOptions options = {});
  Parameter(const Parameter&) = delete;
  Parameter& operator=(const Parameter&) = delete;

  const std::string& name() const { return name_; }
  const Shape& shape() const { return shape_; }
  bool shape_known() const;
  DType dtype() const { return dtype_; }
  GradReq grad_req() const { return grad_req_; }
  double lr_mult() const { return lr_mult_; }
  double wd_mult() const { return wd_mult_; }
  void set_lr_mult(double mult) { lr_mult_ = mult; }
  void set_wd_mult(double mult) { wd_mult_ = mult; }
  const std::shared_ptr<const Initializer>& init() const { return init_; }

  // Completes unknown (0) dimensions; known dimensions must agree (kiln::Error naming the
  // parameter and both shapes otherwise).
  void set_shape(const Shape& shape);
  // kNull drops the gradient buffer; kWrite / kAdd make a zeroed one.
  void set_grad_req(GradReq req);

  // Fills the parameter with its own initializer, else `init` (by MXNet's name rules: "weight"
  // draws, "bias" zeros, ...), else Uniform(0.07), Gluon's default. An initialized parameter is
  // left alone unless force_reinit. With an unknown dimension the fill waits for
  // finish_deferred_init (an error when allow_deferred_init is false).
  void initialize(std::shared_ptr<const Initializer> init = nullptr, Device device = cpu(),
                  bool force_reinit = false);
  bool initialized() const { return data_.defined(); }
  bool deferred() const { return deferred_; }
  // Runs the deferred fill now that the shape is known; nothing when none is pending.
  void finish_deferred_init();

  // The value and its gradient buffer; kiln::Error naming the parameter before initialization
  // (and for grad() when grad_req is kNull).
  NDArray data() const;
  NDArray grad() const;
  // Replaces the value (same shape; the shape is taken from `value` while it is unknown). The
  // parameter keeps its array, so arrays from data() see the new value.
  void set_data(const NDArray& value);
  void zero_grad();

 private:
  void allocate(Device device);

  std::string name_;
  Shape shape_;
  DType dtype_;
  std::shared_ptr<const Initializer> init_;
  GradReq grad_req_;
  double lr_mult_, wd_mult_;
  bool allow_deferred_init_;

  NDArray data_;
  bool deferred_ = false;
  std::shared_ptr<const Initializer> deferred_init_;
  Device deferred_device_ = cpu();
};

// Parameters by full name, in the order they were added (Gluon's ParameterDict).
class ParameterDict {
 public:
  ParameterDict() = default;

  // Adds a parameter; adding the same one again is a no-op, another one of the same name an error.
  void add(std::shared_ptr<Parameter> parameter);
  void update(const ParameterDict& other);
  bool contains(const std::string& name) const;
  // kiln::Error (kNotFound) naming the parameter when there is none of that name.
  Parameter& operator[](const std::string& name) const;
  std::shared_ptr<Parameter> get(const std::string& name) const;
  std::vector<std::string> keys() const;
  size_t size() const { return params_.size(); }
  auto begin() const { return params_.begin(); }
  auto end() const { return params_.end(); }

  // The parameters whose full name matches the regular expression (std::regex_match, as Gluon's
  // re.match of the whole name is used: "conv.*_weight").
  ParameterDict select(const std::string& pattern) const;

  void initialize(std::shared_ptr<const Initializer> init = nullptr, Device device = cpu(),
                  bool force_reinit = false);
  void zero_grad();
  void set_grad_req(GradReq req);
  void set_lr_mult(double mult);
  void set_wd_mult(double mult);

  // MXNet .params with the full names (less strip_prefix, which every name must start with), as
  // ParameterDict.save writes them.
  void save(const std::string& path, const std::string& strip_prefix = "") const;
  // Loads values by name (restore_prefix + the file's name). Unless allow_missing, parameters
  // missing from the file are an error listing them; unless ignore_extra, so are names in the
  // file that match no parameter. A shape that differs from the parameter's is an error naming
  // the parameter and both shapes; nothing is changed when any check fails.
  void load(const std::string& path, Device device = cpu(), bool allow_missing = false,
            bool ignore_extra = false, const std::string& restore_prefix = "") const;

 private:
  std::vector<std::shared_ptr<Parameter>> params_;
};

// Sets each named parameter from `values` (name -> array) with the checks ParameterDict::load
// describes; `source` names the file in errors. Shared by ParameterDict::load and
// Block::load_parameters.
void load_named_values(const std::vector<std::pair<std::string, std::shared_ptr<Parameter>>>& targets,
                       const std::vector<std::pair<std::string, Tensor>>& values, const std::string& source,
                       Device device, bool allow_missing, bool ignore_extra);

}  // namespace kiln::nn
