// Gluon parameters: deferred initialization, gradient buffers, and ParameterDict's selection,
// save and load (MXNet .params through kiln::mxnet).
#include "kiln/nn/parameter.hpp"

#include <algorithm>
#include <regex>
#include <sstream>

#include "kiln/autograd.hpp"
#include "kiln/mxnet_format.hpp"

namespace kiln::nn {

namespace {

// Copies `value` into `target`'s storage without recording (the parameter's array stays the
// autograd variable it is).
void copy_into(const NDArray& target, const NDArray& value) {
  auto paused = autograd::pause(autograd::is_training());
  nd::invoke_into("Identity", {value.dtype() == target.dtype() ? value : value.astype(target.dtype())},
                  {target});
}

std::string join(const std::vector<std::string>& names) {
  std::ostringstream os;
  for (size_t i = 0; i < names.size(); ++i) os << (i ? ", " : "") << "'" << names[i] << "'";
  return os.str();
}

}  // namespace

Parameter::Parameter(std::string name, ParameterOptions options)
    : name_(std::move(name)),
      shape_(std::move(options.shape)),
      dtype_(options.dtype),
      init_(std::move(options.init)),
      grad_req_(options.grad_req),
      lr_mult_(options.lr_mult),
      wd_mult_(options.wd_mult),
      allow_deferred_init_(options.allow_deferred_init) {
  for (int64_t d : shape_)
    KILN_CHECK(d >= 0, ErrorCode::kInvalidArgument, "Parameter '", name_,
               "': dimensions must be >= 0 (0 = unknown), got shape ", shape_);
}

bool Parameter::shape_known() const {
  return std::all_of(shape_.begin(), shape_.end(), [](int64_t d) { return d > 0; });
}

void Parameter::set_shape(const Shape& shape) {
  bool fits = shape.ndim() == shape_.ndim();
  for (int i = 0; fits && i < shape.ndim(); ++i) fits = shape_[i] == 0 || shape_[i] == shape[i];
  KILN_CHECK(fits, ErrorCode::kShapeMismatch, "Parameter '", name_, "': shape ", shape,
             " does not fit its shape ", shape_, " (0 = unknown)");
  shape_ = shape;
}

void Parameter::set_grad_req(GradReq req) {
  grad_req_ = req;
  if (!data_.defined()) return;
  // A fresh array: a variable's grad_req cannot change once attached.
  NDArray fresh = data_.copy();
  if (req != GradReq::kNull) fresh.attach_grad(req);
  data_ = fresh;
}

void Parameter::allocate(Device device) {
  data_ = nd::zeros(shape_, dtype_, device);
  if (grad_req_ != GradReq::kNull) data_.attach_grad(grad_req_);
}

void Parameter::initialize(std::shared_ptr<const Initializer> init, Device device, bool force_reinit) {
  if (initialized() && !force_reinit) return;
  if (!shape_known()) {
    KILN_CHECK(allow_deferred_init_, ErrorCode::kInvalidArgument, "Parameter '", name_,
               "': cannot initialize with unknown dimensions in shape ", shape_,
               " (allow_deferred_init is false)");
    deferred_ = true;
    deferred_init_ = std::move(init);
    deferred_device_ = device;
    return;
  }
  allocate(device);
  deferred_ = false;
  // Deferred initialization runs inside the first forward pass, which may be recording.
  auto paused = autograd::pause(autograd::is_training());
  if (init_) {
    init_->init_weight(name_, data_);
  } else if (init) {
    (*init)(name_, data_);
  } else {
    Uniform()(name_, data_);
  }
}

void Parameter::finish_deferred_init() {
  if (!deferred_) return;
  KILN_CHECK(shape_known(), ErrorCode::kInvalidArgument, "Parameter '", name_,
             "': deferred initialization needs a known shape, got ", shape_);
  initialize(deferred_init_, deferred_device_, true);
  deferred_init_.reset();
}

NDArray Parameter::data() const {
  KILN_CHECK(!deferred_, ErrorCode::kInvalidArgument, "Parameter '", name_,
             "' has not been initialized yet because initialization was deferred (shape ", shape_,
             "); it happens at the first forward pass");
  KILN_CHECK(initialized(), ErrorCode::kInvalidArgument, "Parameter '", name_,
             "' has not been initialized; call initialize() first");
  return data_;
}

NDArray Parameter::grad() const {
  const NDArray value = data();
  KILN_CHECK(grad_req_ != GradReq::kNull, ErrorCode::kInvalidArgument, "Parameter '", name_,
             "' has no gradient: its grad_req is null");
  return value.grad();
}

void Parameter::set_data(const NDArray& value) {
  if (!initialized()) {
    set_shape(value.shape());
    allocate(value.device());
    deferred_ = false;
  }
  KILN_CHECK(value.shape() == shape_, ErrorCode::kShapeMismatch, "Parameter '", name_,
             "': set_data with shape ", value.shape(), ", expected ", shape_);
  copy_into(data_, value);
}

void Parameter::zero_grad() {
  if (!initialized() || grad_req_ == GradReq::kNull) return;
  const NDArray g = data_.grad();
  copy_into(g, nd::zeros(g.shape(), g.dtype(), g.device()));
}

void ParameterDict::add(std::shared_ptr<Parameter> parameter) {
  for (const auto& p : params_) {
    if (p->name() != parameter->name()) continue;
    KILN_CHECK(p == parameter, ErrorCode::kInvalidArgument, "ParameterDict: two different parameters named '",
               p->name(), "'");
    return;
  }
  params_.push_back(std::move(parameter));
}

void ParameterDict::update(const ParameterDict& other) {
  for (const auto& p : other) add(p);
}

bool ParameterDict::contains(const std::string& name) const {
  return std::any_of(params_.begin(), params_.end(), [&](const auto& p) { return p->name() == name; });
}

std::shared_ptr<Parameter> ParameterDict::get(const std::string& name) const {
  for (const auto& p : params_)
    if (p->name() == name) return p;
  raise(ErrorCode::kNotFound, "ParameterDict: no parameter named '", name, "'");
}

Parameter& ParameterDict::operator[](const std::string& name) const {
  return *get(name);
}

std::vector<std::string> ParameterDict::keys() const {
  std::vector<std::string> names;
  for (const auto& p : params_) names.push_back(p->name());
  return names;
}

ParameterDict ParameterDict::select(const std::string& pattern) const {
  std::regex re;
  try {
    re = std::regex(pattern);
  } catch (const std::regex_error& e) {
    raise(ErrorCode::kInvalidArgument, "ParameterDict::select: bad regular expression '", pattern,
          "': ", e.what());
  }
  ParameterDict selected;
  for (const auto& p : params_)
    if (std::regex_match(p->name(), re)) selected.add(p);
  return selected;
}

void ParameterDict::initialize(std::shared_ptr<const Initializer> init, Device device, bool force_reinit) {
  for (const auto& p : params_) p->initialize(init, device, force_reinit);
}

void ParameterDict::zero_grad() {
  for (const auto& p : params_) p->zero_grad();
}

void ParameterDict::set_grad_req(GradReq req) {
  for (const auto& p : params_) p->set_grad_req(req);
}

void ParameterDict::set_lr_mult(double mult) {
  for (const auto& p : params_) p->set_lr_mult(mult);
}

void ParameterDict::set_wd_mult(double mult) {
  for (const auto& p : params_) p->set_wd_mult(mult);
}

void ParameterDict::save(const std::string& path, const std::string& strip_prefix) const {
  mxnet::NamedTensors file;
  for (const auto& p : params_) {
    KILN_CHECK(p->name().rfind(strip_prefix, 0) == 0, ErrorCode::kInvalidArgument, "ParameterDict::save: '",
               p->name(), "' does not start with strip_prefix '", strip_prefix, "'");
    file.names.push_back(p->name().substr(strip_prefix.size()));
    file.tensors.push_back(p->data().tensor().contiguous());
  }
  mxnet::save_params(path, file);
}

void ParameterDict::load(const std::string& path, Device device, bool allow_missing, bool ignore_extra,
                         const std::string& restore_prefix) const {
  const mxnet::NamedTensors file = mxnet::load_params(path);
  std::vector<std::pair<std::string, Tensor>> values;
  for (size_t i = 0; i < file.tensors.size(); ++i) {
    std::string name = i < file.names.size() ? file.names[i] : std::to_string(i);
    // Files written by export() name arguments "arg:NAME" and auxiliary states "aux:NAME".
    if (name.rfind("arg:", 0) == 0 || name.rfind("aux:", 0) == 0) name = name.substr(4);
    values.emplace_back(restore_prefix + name, file.tensors[i]);
  }
  std::vector<std::pair<std::string, std::shared_ptr<Parameter>>> targets;
  for (const auto& p : params_) targets.emplace_back(p->name(), p);
  load_named_values(targets, values, path, device, allow_missing, ignore_extra);
}

void load_named_values(const std::vector<std::pair<std::string, std::shared_ptr<Parameter>>>& targets,
                       const std::vector<std::pair<std::string, Tensor>>& values, const std::string& source,
                       Device device, bool allow_missing, bool ignore_extra) {
  std::vector<std::string> missing, extra;
  std::vector<std::pair<std::shared_ptr<Parameter>, const Tensor*>> assignments;
  for (const auto& [name, param] : targets) {
    const std::string& wanted = name;  // a lambda captures a name, not a structured binding (clang 14)
    const auto found =
        std::find_if(values.begin(), values.end(), [&](const auto& v) { return v.first == wanted; });
    if (found == values.end()) {
      missing.push_back(name);
      continue;
    }
    const Tensor& value = found->second;
    KILN_CHECK(value.defined(), ErrorCode::kIo, source, ": parameter '", name, "' is stored without a value");
    bool fits = value.shape().ndim() == param->shape().ndim();
    for (int i = 0; fits && i < value.shape().ndim(); ++i)
      fits = param->shape()[i] == 0 || param->shape()[i] == value.shape()[i];
    KILN_CHECK(fits, ErrorCode::kShapeMismatch, source, ": parameter '", name, "' has shape ", param->shape(),
               " but the file holds shape ", value.shape());
    assignments.emplace_back(param, &value);
  }
  for (const auto& [name, value] : values) {
    const std::string& stored = name;  // a lambda captures a name, not a structured binding (clang 14)
    const bool known =
        std::any_of(targets.begin(), targets.end(), [&](const auto& t) { return t.first == stored; });
    if (!known) extra.push_back(name);
  }
  KILN_CHECK(allow_missing || missing.empty(), ErrorCode::kNotFound, source,
             ": parameters missing from the file: ", join(missing), " (allow_missing loads the rest)");
  KILN_CHECK(ignore_extra || extra.empty(), ErrorCode::kInvalidArgument, source,
             ": the file has parameters the block does not: ", join(extra), " (ignore_extra skips them)");
  for (const auto& [param, value] : assignments) param->set_data(NDArray(*value).copyto(device));
}

}  // namespace kiln::nn
