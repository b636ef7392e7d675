// Predictor: a graph optimized once, compiled per input signature (ProgramCache), validated
// inputs, and outputs by position or by name. Loading model files is in predictor_load.cc.
#include "kiln/predictor.hpp"

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include "graph/graph.h"
#include "graph/pass_manager.h"
#include "kiln/error.hpp"
#include "kiln/threading.hpp"
#include "runtime/plan.h"
#include "runtime/program_cache.h"

namespace kiln {

std::string describe(const TensorSpec& spec) {
  if (!spec.known) return "any tensor";
  return ops::describe_info(
      ops::TensorInfo{spec.dtype, spec.shape,
                      spec.sequence ? ops::ValueKind::kSequence : ops::ValueKind::kTensor, spec.optional});
}

namespace {

std::string describe(const Tensor& t) {
  return t.defined() ? ops::describe_info(ops::info_of(t)) : "no value";
}

TensorSpec spec_of(const graph::Value& v) {
  if (!v.info) return TensorSpec{v.name, DType::kFloat32, Shape{}, false};
  const bool sequence = v.info->kind == ops::ValueKind::kSequence;
  return TensorSpec{v.name, v.info->dtype, sequence ? Shape{} : v.info->shape,
                    true,   sequence,      v.info->optional};
}

// Whether `shape` is one of the shapes `declared` allows (-1 dims are free).
bool fits(const Shape& declared, const Shape& shape) {
  if (declared.ndim() != shape.ndim()) return false;
  for (int i = 0; i < declared.ndim(); ++i)
    if (declared[i] >= 0 && declared[i] != shape[i]) return false;
  return true;
}

// The largest input whose values a plan is keyed by and compiled for (Reshape's shape, Resize's
// sizes, TopK's K): a larger one is read while the model runs instead (a StagedProgram).
constexpr int64_t kMaxKeyedValueElements = 1024;

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
  // Per input: its values decide shapes (runtime::shape_value_inputs), so plans are keyed by them.
  std::vector<bool> decides_shapes;
  mutable runtime::ProgramCache plans;  // thread-safe; filled by const predict() calls
  runtime::ProgramOptions program_options;
  // Weights of `graph` that a plan's kernels hold packed and the graph no longer holds as given
  // (see runtime::ConstantReleaser): each is rebuilt before the graph is read again. Guarded,
  // with the graph's constants, by `graph_mutex`, which also makes compiles one at a time.
  struct ReleasedWeight {
    graph::Value* value;
    Shape shape;  // the value's own (the kernel may have packed a view of another shape)
    std::function<Tensor()> rebuild;
  };
  std::mutex graph_mutex;
  std::vector<ReleasedWeight> released;
  bool keep_weights = false;  // set once graph() has handed the graph out

  Impl(graph::Graph g, size_t max_cached_plans) : graph(std::move(g)), plans(max_cached_plans) {}

  std::string label() const { return name.empty() ? std::string("model") : "model '" + name + "'"; }

  // Whether the plan for input k given as `t` is keyed by, and compiled for, its values.
  bool keyed_by_value(size_t k, const Tensor& t) const {
    return decides_shapes[k] && t.defined() && !t.is_sequence() && t.numel() <= kMaxKeyedValueElements;
  }

  void check(size_t k, const Tensor& t) const {
    const TensorSpec& spec = inputs[k];
    if (!t.defined() && spec.optional) return;  // an optional input left absent
    KILN_CHECK(t.defined(), ErrorCode::kInvalidArgument, label(), ": input '", spec.name, "': expected ",
               describe(spec), ", got an undefined tensor");
    KILN_CHECK(t.device().is_cpu(), ErrorCode::kInvalidArgument, label(), ": input '", spec.name,
               "': expected a tensor on cpu(0), got one on ", t.device());
    KILN_CHECK(t.is_sequence() == spec.sequence, ErrorCode::kTypeMismatch, label(), ": input '", spec.name,
               "': expected ", describe(spec), ", got ", describe(t));
    if (!spec.known) return;
    if (spec.sequence) {
      KILN_CHECK(t.dtype() == spec.dtype, ErrorCode::kTypeMismatch, label(), ": input '", spec.name,
                 "': expected ", describe(spec), ", got ", describe(t));
      return;
    }
    KILN_CHECK(t.dtype() == spec.dtype, ErrorCode::kTypeMismatch, label(), ": input '", spec.name,
               "': expected ", describe(spec), ", got ", describe(t));
    KILN_CHECK(fits(spec.shape, t.shape()), ErrorCode::kShapeMismatch, label(), ": input '", spec.name,
               "': expected ", describe(spec), ", got ", describe(t));
  }

  // Puts back the weights a plan let go (graph_mutex held); `forget`: for good, else until
  // let_go_again().
  void rebuild_weights(bool forget) {
    for (ReleasedWeight& w : released) w.value->constant = w.rebuild().reshape(w.shape);
    if (forget) released.clear();
  }
  void let_go_again() {
    for (ReleasedWeight& w : released) w.value->constant = Tensor();
  }

  // Compiles `bound` (a copy of `graph` bound to input shapes) letting go of each weight that its
  // kernels pack as soon as it is packed, here too: the process then holds one copy of a weight
  // at a time, the packed one (graph_mutex held).
  std::shared_ptr<const runtime::Plan> compile_releasing(graph::Graph bound) {
    const runtime::CompileOptions& compile_options = program_options.compile;
    if (keep_weights) return runtime::compile(bound, compile_options);
    std::unordered_map<const Storage*, std::vector<graph::Value*>> holders;
    for (graph::Value* v : graph.initializers())
      if (v->constant.is_contiguous() && v->constant.offset() == 0)
        holders[v->constant.storage().get()].push_back(v);
    const runtime::ConstantReleaser release = [&](runtime::ReleasedConstant c) {
      const auto it = holders.find(c.storage);
      if (it == holders.end()) return;
      for (graph::Value* v : it->second) {
        // A view of another shape over the same bytes gets them back in its own shape.
        if (!v->constant.defined() || v->constant.dtype() != c.dtype ||
            v->constant.numel() != c.shape.numel())
          continue;
        released.push_back({v, v->constant.shape(), c.rebuild});
        v->constant = Tensor();
      }
    };
    return runtime::compile(std::move(bound), compile_options, release);
  }

  std::vector<Tensor> run(const std::vector<Tensor>& given) {
    if (given.size() != inputs.size()) {
      std::string names;
      for (const TensorSpec& s : inputs) names += (names.empty() ? "'" : ", '") + s.name + "'";
      raise(ErrorCode::kInvalidArgument, label(), ": expected ", inputs.size(), " input(s) (", names,
            "), got ", given.size());
    }
    // The input signature, e.g. "8,784;": shapes, the element type of inputs declared without
    // one, which the plan is then compiled for ("3,float64;"), and the bytes of small inputs whose
    // values decide shapes ("2,int64=<16 bytes>;").
    std::string key;
    for (size_t k = 0; k < given.size(); ++k) {
      const Tensor& t = given[k];
      check(k, t);
      runtime::append_signature(key, t, !inputs[k].known || decides_shapes[k]);
      if (keyed_by_value(k, t)) {
        const Tensor bytes = t.contiguous();
        key += '=';
        key.append(static_cast<const char*>(bytes.raw_data()), bytes.nbytes());
      }
      key += ';';
    }
    const auto compile = [&]() -> std::shared_ptr<const runtime::Program> {
      runtime::InputBinding binding;
      for (size_t k = 0; k < given.size(); ++k) {
        runtime::bind_given(binding, inputs[k].name, given[k], !inputs[k].known);
        if (keyed_by_value(k, given[k])) binding.values.emplace(inputs[k].name, given[k]);
      }
      binding.allow_unknown = true;
      std::lock_guard lock(graph_mutex);
      rebuild_weights(/*forget=*/true);
      // The passes again, now that every shape is known: exported models often hide shapes
      // behind free dimensions, which keeps patterns (MatMul + bias) from matching at load.
      graph::Graph bound = runtime::bind_inputs(graph, binding);
      graph::PassManager::for_level(program_options.level).run(bound);
      return runtime::make_program(std::move(bound), program_options, !binding.values.empty(),
                                   [this](graph::Graph g) { return compile_releasing(std::move(g)); });
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
      KILN_CHECK(it != named.end() || s.optional, ErrorCode::kInvalidArgument, label(), ": input '", s.name,
                 "' (", describe(s), ") is missing");
      ordered.push_back(it != named.end() ? it->second : Tensor());  // an optional input left out is empty
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
  KILN_CHECK(options.threads >= 0, ErrorCode::kInvalidArgument,
             "Predictor: threads must be 0 (all cores) or a count of threads, got ", options.threads);
  KILN_CHECK(options.precision == "fp32" || options.kernels == "fast", ErrorCode::kInvalidArgument,
             "Predictor: precision \"", options.precision,
             "\" computes in the fast kernels; kernels \"reference\" run float32 only");
  if (options.threads > 0) set_num_threads(options.threads);
  impl_ = std::make_unique<Impl>(std::move(graph), options.max_cached_plans);
  KILN_CHECK(options.max_dynamic_elements > 0, ErrorCode::kInvalidArgument,
             "Predictor: max_dynamic_elements must be positive, got ", options.max_dynamic_elements);
  runtime::ProgramOptions& program = impl_->program_options;
  if (options.kernels == "fast") program.compile.providers = runtime::registered_kernel_providers();
  program.compile.precision = runtime::parse_precision(options.precision);
  program.level = level;
  program.max_cached_plans = options.max_cached_plans;
  program.max_dynamic_elements = options.max_dynamic_elements;
  KILN_CHECK(options.max_loop_iterations > 0, ErrorCode::kInvalidArgument,
             "Predictor: max_loop_iterations must be positive, got ", options.max_loop_iterations);
  program.max_loop_iterations = options.max_loop_iterations;
  graph::Graph& g = impl_->graph;
  impl_->name = g.name;
  g.verify();
  runtime::narrow_input_shapes(g, options.input_shapes, impl_->label(), "input_shapes");
  graph::PassManager::for_level(level).run(g);
  g.infer_shapes(/*allow_unknown=*/true);  // what can be known before inputs arrive, for inputs()/outputs()
  const std::vector<const graph::Value*> deciding = runtime::shape_value_inputs(g);
  for (const graph::Value* v : g.inputs()) {
    if (v->is_constant()) {
      impl_->feed_from.push_back(-1);
      impl_->feeds_given = false;
    } else {
      impl_->feed_from.push_back(static_cast<int>(impl_->inputs.size()));
      impl_->inputs.push_back(spec_of(*v));
      impl_->decides_shapes.push_back(std::find(deciding.begin(), deciding.end(), v) != deciding.end());
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
  // The caller may read any weight from now on: put back those let go, and keep them.
  std::lock_guard lock(impl_->graph_mutex);
  impl_->rebuild_weights(/*forget=*/true);
  impl_->keep_weights = true;
  return impl_->graph;
}
void Predictor::read_graph(const std::function<void(const graph::Graph&)>& read) const {
  std::lock_guard lock(impl_->graph_mutex);
  impl_->rebuild_weights(/*forget=*/false);
  try {
    read(impl_->graph);
  } catch (...) {
    impl_->let_go_again();
    throw;
  }
  impl_->let_go_again();
}
size_t Predictor::num_cached_plans() const {
  return impl_->plans.size();
}

}  // namespace kiln
