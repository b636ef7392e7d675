// Gluon blocks: Gluon 1.x naming (per-thread counts and name scopes), parameter collection,
// save/load with structural names, deferred initialization, and the sequential containers.
#include "kiln/nn/block.hpp"

#include <algorithm>

#include "kiln/mxnet_format.hpp"

namespace kiln::nn {

namespace {

// Per thread, as MXNet's NameManager and _BlockScope are thread-local.
thread_local std::map<std::string, int> global_counts;
thread_local std::vector<Block*> scope_stack;

}  // namespace

NameManager::NameManager() : saved_(std::move(global_counts)) {
  global_counts.clear();
}

NameManager::~NameManager() {
  global_counts = std::move(saved_);
}

NameScope::NameScope(Block& block) {
  scope_stack.push_back(&block);
}

NameScope::~NameScope() {
  scope_stack.pop_back();
}

Block::Block(const std::string& hint, const std::string& prefix) {
  if (scope_stack.empty()) {
    prefix_ = prefix.empty() ? hint + std::to_string(global_counts[hint]++) + "_" : prefix;
    return;
  }
  Block& parent = *scope_stack.back();
  const std::string own = prefix.empty() ? hint + std::to_string(parent.child_counts_[hint]++) + "_" : prefix;
  prefix_ = parent.prefix_ + own;
}

std::string Block::name() const {
  return !prefix_.empty() && prefix_.back() == '_' ? prefix_.substr(0, prefix_.size() - 1) : prefix_;
}

void Block::add_child(std::shared_ptr<Block> child, std::string name) {
  KILN_CHECK(child != nullptr, ErrorCode::kInvalidArgument, "Block '", this->name(), "': null child");
  if (name.empty()) name = std::to_string(children_.size());
  for (const auto& [existing, block] : children_)
    KILN_CHECK(existing != name, ErrorCode::kInvalidArgument, "Block '", this->name(), "': a child named '",
               name, "' is already registered");
  children_.emplace_back(std::move(name), std::move(child));
}

std::shared_ptr<Parameter> Block::register_parameter(const std::string& attr, ParameterOptions options) {
  auto param = std::make_shared<Parameter>(prefix_ + attr, std::move(options));
  params_.emplace_back(attr, param);
  return param;
}

std::shared_ptr<Parameter> Block::register_parameter_as(const std::string& name, ParameterOptions options) {
  auto param = std::make_shared<Parameter>(name, std::move(options));
  params_.emplace_back(name, param);
  return param;
}

ParameterDict Block::collect_params(const std::string& select) const {
  ParameterDict all;
  for (const auto& [attr, param] : params_) all.add(param);
  for (const auto& [name, child] : children_) all.update(child->collect_params());
  return select.empty() ? all : all.select(select);
}

std::vector<std::pair<std::string, std::shared_ptr<Parameter>>> Block::collect_params_with_prefix(
    const std::string& prefix) const {
  const std::string dotted = prefix.empty() ? "" : prefix + ".";
  std::vector<std::pair<std::string, std::shared_ptr<Parameter>>> named;
  for (const auto& [attr, param] : params_) named.emplace_back(dotted + attr, param);
  for (const auto& [name, child] : children_) {
    auto below = child->collect_params_with_prefix(dotted + name);
    named.insert(named.end(), below.begin(), below.end());
  }
  return named;
}

void Block::initialize(std::shared_ptr<const Initializer> init, Device device, bool force_reinit) {
  collect_params().initialize(std::move(init), device, force_reinit);
}

void Block::save_parameters(const std::string& path) const {
  mxnet::NamedTensors file;
  for (const auto& [name, param] : collect_params_with_prefix()) {
    // A parameter shared by two children is saved once, under its first name (as Gluon).
    if (std::find(file.names.begin(), file.names.end(), name) != file.names.end()) continue;
    file.names.push_back(name);
    file.tensors.push_back(param->data().tensor().contiguous());
  }
  mxnet::save_params(path, file);
}

void Block::load_parameters(const std::string& path, Device device, bool allow_missing, bool ignore_extra) {
  const mxnet::NamedTensors file = mxnet::load_params(path);
  std::vector<std::pair<std::string, Tensor>> values;
  for (size_t i = 0; i < file.tensors.size(); ++i) {
    std::string name = i < file.names.size() ? file.names[i] : std::to_string(i);
    if (name.rfind("arg:", 0) == 0 || name.rfind("aux:", 0) == 0) name = name.substr(4);
    values.emplace_back(std::move(name), file.tensors[i]);
  }
  auto targets = collect_params_with_prefix();
  // A file of full names (ParameterDict::save, export) has none of the structural names.
  const bool structural = std::any_of(values.begin(), values.end(), [&](const auto& v) {
    return std::any_of(targets.begin(), targets.end(), [&](const auto& t) { return t.first == v.first; });
  });
  if (!structural && !values.empty()) {
    targets.clear();
    for (const auto& p : collect_params()) targets.emplace_back(p->name(), p);
  }
  load_named_values(targets, values, path, device, allow_missing, ignore_extra);
}

NDArray Block::operator()(const NDArray& x) {
  const std::vector<NDArray> outputs = forward({x});
  KILN_CHECK(outputs.size() == 1, ErrorCode::kInvalidArgument, "Block '", name(),
             "': expected 1 output, got ", outputs.size(),
             "; call it with a vector of inputs to get all outputs");
  return outputs[0];
}

Sequential::Sequential(const std::string& prefix) : Block("sequential", prefix) {}

std::vector<NDArray> Sequential::forward(const std::vector<NDArray>& inputs) {
  std::vector<NDArray> values = inputs;
  for (const auto& [name, child] : children()) values = child->forward(values);
  return values;
}

Block& Sequential::operator[](size_t index) const {
  KILN_CHECK(index < children().size(), ErrorCode::kOutOfRange, "Sequential '", name(), "': index ", index,
             " out of range for ", children().size(), " children");
  return *children()[index].second;
}

HybridSequential::HybridSequential(const std::string& prefix) : HybridBlock("hybridsequential", prefix) {}

std::vector<NDArray> HybridSequential::hybrid_forward(const std::vector<NDArray>& inputs) {
  std::vector<NDArray> values = inputs;
  for (const auto& [name, child] : children()) values = child->forward(values);
  return values;
}

HybridBlock& HybridSequential::operator[](size_t index) const {
  KILN_CHECK(index < children().size(), ErrorCode::kOutOfRange, "HybridSequential '", name(), "': index ",
             index, " out of range for ", children().size(), " children");
  return static_cast<HybridBlock&>(*children()[index].second);
}

}  // namespace kiln::nn
