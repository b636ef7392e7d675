// Predictor: a graph optimized once, compiled per input-shape signature (PlanCache), validated
// inputs, and outputs by position or by name. Loading model files is in predictor_load.cc.
#include "kiln/predictor.hpp"

#include "graph/graph.h"
#include "graph/pass_manager.h"
#include "kiln/error.hpp"
#include "kiln/threading.hpp"
#include "runtime/plan.h"
#include "runtime/plan_cache.h"

namespace kiln {

namespace {

std::string describe(const TensorSpec& spec) {
  return spec.known ? std::string(dtype_name(spec.dtype)) + " " + spec.shape.to_string() : "any tensor";
}

std::string describe(const Tensor& t) {
  return std::string(dtype_name(t.dtype())) + " " + t.shape().to_string();
}

TensorSpec spec_of(const graph::Value& v) {
  if (!v.info) return TensorSpec{v.name, DType::kFloat32, Shape{}, false};
  return TensorSpec{v.name, v.info->dtype, v.info->shape, true};
}

// Whether `shape` is one of the shapes `declared` allows (-1 dims are free).
bool fits(const Shape& declared, const Shape& shape) {
  if (declared.ndim() != shape.ndim()) return false;
  for (int i = 0; i < declared.ndim(); ++i)
    if (declared[i] >= 0 && declared[i] != shape[i]) return false;
  return true;
}

}  // namespace

struct Predictor::Impl {
  std::string name;
  graph::Graph graph;
  std::vector<TensorSpec> inputs, outputs;
  // Per graph input: the position among `inputs`, or -1 for an input that is an initializer.
  std::vector<int> feed_from;
  // True when no graph input is an initializer: the caller's inputs are the feed as they are,
  // without a copy of the vector (an allocation per call, a visible cost for a tiny model).
  bool feeds_given = true;
  mutable runtime::PlanCache plans;  // thread-safe; filled by const predict() calls
  runtime::CompileOptions compile_options;
  graph::OptLevel level = graph::OptLevel::kNone;

  Impl(graph::Graph g, size_t max_cached_plans) : graph(std::move(g)), plans(max_cached_plans) {}

  std::string label() const { return name.empty() ? std::string("model") : "model '" + name + "'"; }

  void check(size_t k, const Tensor& t) const {
    const TensorSpec& spec = inputs[k];
    KILN_CHECK(t.defined(), ErrorCode::kInvalidArgument, label(), ": input '", spec.name, "': expected ",
               describe(spec), ", got an undefined tensor");
    KILN_CHECK(t.device().is_cpu(), ErrorCode::kInvalidArgument, label(), ": input '", spec.name,
               "': expected a tensor on cpu(0), got one on ", t.device());
    if (!spec.known) return;
    KILN_CHECK(t.dtype() == spec.dtype, ErrorCode::kTypeMismatch, label(), ": input '", spec.name,
               "': expected ", describe(spec), ", got ", describe(t));
    KILN_CHECK(fits(spec.shape, t.shape()), ErrorCode::kShapeMismatch, label(), ": input '", spec.name,
               "': expected ", describe(spec), ", got ", describe(t));
  }

  std::vector<Tensor> run(const std::vector<Tensor>& given) const {
    if (given.size() != inputs.size()) {
      std::string names;
      for (const TensorSpec& s : inputs) names += (names.empty() ? "'" : ", '") + s.name + "'";
      raise(ErrorCode::kInvalidArgument, label(), ": expected ", inputs.size(), " input(s) (", names,
            "), got ", given.size());
    }
    // The input signature, e.g. "8,784;": shapes, and the element type of inputs declared without
    // one, which the plan is then compiled for ("3,float64;").
    std::string key;
    for (size_t k = 0; k < given.size(); ++k) {
      check(k, given[k]);
      for (int64_t d : given[k].shape().dims()) key += std::to_string(d) + ',';
      if (!inputs[k].known) key += dtype_name(given[k].dtype());
      key += ';';
    }
    const auto compile = [&] {
      std::map<std::string, Shape> shapes;
      std::map<std::string, DType> untyped_dtypes;
      for (size_t k = 0; k < given.size(); ++k) {
        shapes.emplace(inputs[k].name, given[k].shape());
        if (!inputs[k].known) untyped_dtypes.emplace(inputs[k].name, given[k].dtype());
      }
      // The passes again, now that every shape is known: exported models often hide shapes
      // behind free dimensions, which keeps patterns (MatMul + bias) from matching at load.
      graph::Graph bound = runtime::bind_input_shapes(graph, shapes, untyped_dtypes);
      graph::PassManager::for_level(level).run(bound);
      return runtime::compile(bound, compile_options);
    };
    if (feeds_given) return plans.run(key, compile, given);
    std::vector<Tensor> feed;
    feed.reserve(feed_from.size());
    for (size_t i = 0; i < feed_from.size(); ++i)
      feed.push_back(feed_from[i] >= 0 ? given[static_cast<size_t>(feed_from[i])]
                                       : graph.inputs()[i]->constant);
    return plans.run(key, compile, feed);
  }

  std::vector<Tensor> order(const std::map<std::string, Tensor>& named) const {
    for (const auto& [input_name, tensor] : named) {
      bool known_name = false;
      for (const TensorSpec& s : inputs) known_name |= s.name == input_name;
      if (!known_name) {
        std::string names;
        for (const TensorSpec& s : inputs) names += (names.empty() ? "'" : ", '") + s.name + "'";
        raise(ErrorCode::kNotFound, label(), ": unknown input '", input_name, "' (the inputs are ", names,
              ")");
      }
    }
    std::vector<Tensor> ordered;
    for (const TensorSpec& s : inputs) {
      const auto it = named.find(s.name);
      KILN_CHECK(it != named.end(), ErrorCode::kInvalidArgument, label(), ": input '", s.name, "' (",
                 describe(s), ") is missing");
      ordered.push_back(it->second);
    }
    return ordered;
  }
};

Predictor::Predictor(graph::Graph graph, const PredictorOptions& options) {
  KILN_CHECK(options.device.is_cpu(), ErrorCode::kUnsupported, "Predictor: device ", options.device,
             " is not supported yet; only cpu runs models");
  const graph::OptLevel level = graph::parse_opt_level(options.opt_level);
  KILN_CHECK(options.kernels == "fast" || options.kernels == "reference", ErrorCode::kInvalidArgument,
             "Predictor: kernels must be \"fast\" or \"reference\", got \"", options.kernels, "\"");
  if (options.threads > 0) set_num_threads(options.threads);
  impl_ = std::make_unique<Impl>(std::move(graph), options.max_cached_plans);
  if (options.kernels == "fast") impl_->compile_options.providers = runtime::registered_kernel_providers();
  impl_->compile_options.precision = runtime::parse_precision(options.precision);
  impl_->level = level;
  graph::Graph& g = impl_->graph;
  impl_->name = g.name;
  g.verify();
  graph::PassManager::for_level(level).run(g);
  g.infer_shapes(/*allow_unknown=*/true);  // what can be known before inputs arrive, for inputs()/outputs()
  for (const graph::Value* v : g.inputs()) {
    if (v->is_constant()) {
      impl_->feed_from.push_back(-1);
      impl_->feeds_given = false;
    } else {
      impl_->feed_from.push_back(static_cast<int>(impl_->inputs.size()));
      impl_->inputs.push_back(spec_of(*v));
    }
  }
  for (const graph::Value* v : g.outputs()) impl_->outputs.push_back(spec_of(*v));
}

Predictor::Predictor(Predictor&&) noexcept = default;
Predictor& Predictor::operator=(Predictor&&) noexcept = default;
Predictor::~Predictor() = default;

std::vector<Tensor> Predictor::predict(const std::vector<Tensor>& inputs) const {
  return impl_->run(inputs);
}

std::vector<Tensor> Predictor::predict(const std::map<std::string, Tensor>& inputs) const {
  return impl_->run(impl_->order(inputs));
}

std::map<std::string, Tensor> Predictor::predict_named(const std::map<std::string, Tensor>& inputs) const {
  std::vector<Tensor> out = predict(inputs);
  std::map<std::string, Tensor> named;
  for (size_t i = 0; i < out.size(); ++i) named.emplace(impl_->outputs[i].name, std::move(out[i]));
  return named;
}

const std::string& Predictor::name() const {
  return impl_->name;
}

std::vector<std::string> Predictor::input_names() const {
  std::vector<std::string> names;
  for (const TensorSpec& s : impl_->inputs) names.push_back(s.name);
  return names;
}

std::vector<std::string> Predictor::output_names() const {
  std::vector<std::string> names;
  for (const TensorSpec& s : impl_->outputs) names.push_back(s.name);
  return names;
}

const std::vector<TensorSpec>& Predictor::inputs() const {
  return impl_->inputs;
}
const std::vector<TensorSpec>& Predictor::outputs() const {
  return impl_->outputs;
}
const graph::Graph& Predictor::graph() const {
  return impl_->graph;
}
size_t Predictor::num_cached_plans() const {
  return impl_->plans.size();
}

}  // namespace kiln
