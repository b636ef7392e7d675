// compile(): Graph -> Plan. Everything that can be decided before the first run is decided
// here: the step order, bound attributes, kernels, constant preparation and buffer offsets.
#include <algorithm>
#include <unordered_map>

#include "runtime/graph_checks.h"
#include "runtime/plan.h"

namespace kiln::runtime {

namespace {

using graph::Graph;
using graph::Node;
using graph::Value;

std::string describe(const Value* v) {
  if (!v->producer) return "'" + v->name + "'";
  return "'" + v->name + "' (output " + std::to_string(v->producer_output) + " of " + v->producer->label() +
         ")";
}

const ops::TensorInfo& concrete_info(const Graph& g, const Value* v) {
  KILN_CHECK(v->info.has_value(), ErrorCode::kInvalidArgument, graph_label(g), ": value ", describe(v),
             " has no known shape");
  KILN_CHECK(v->info->shape.is_known(), ErrorCode::kInvalidArgument, graph_label(g), ": value ", describe(v),
             " has shape ", v->info->shape,
             ", which is not concrete; bind the input shapes first (bind_input_shapes)");
  KILN_CHECK(
      fits_in_plan(*v), ErrorCode::kInvalidArgument, graph_label(g), ": value ", describe(v), " is ",
      ops::describe_info(*v->info),
      ", which a plan does not hold; run the graph through a Predictor, which runs such nodes one by one");
  return *v->info;
}

KernelChoice ask_providers(const KernelQuery& query, const CompileOptions& options, std::string& provider) {
  for (const KernelProvider* p : options.providers) {
    if (KernelChoice choice = p->choose(query)) {
      provider = p->name();
      return choice;
    }
  }
  return {};
}

// The schema of the steps compile() adds to convert a value from a backend's layout to row-major.
const ops::OpSchema& layout_conversion_schema() {
  static const ops::OpSchema schema = [] {
    ops::OpSchema s("Reorder");
    s.doc("Copies a value from a backend's layout into row-major.").input("X").output("Y");
    return s;
  }();
  return schema;
}

// Picks in-place pairs, derives lifetimes and assigns arena offsets.
void plan_arena(Plan& plan, const CompileOptions& options) {
  const int num_steps = static_cast<int>(plan.steps.size());
  std::vector<int> last_read(plan.values.size(), -1);
  for (int s = 0; s < num_steps; ++s)
    for (int id : plan.steps[static_cast<size_t>(s)].inputs)
      if (id >= 0) last_read[static_cast<size_t>(id)] = s;

  std::vector<TensorLifetime> lifetimes;
  std::vector<int> lifetime_of(plan.values.size(), -1);
  std::vector<int> arena_values;
  for (int s = 0; s < num_steps; ++s) {
    const PlanStep& step = plan.steps[static_cast<size_t>(s)];
    std::vector<int> given_away;  // an input's buffer goes to at most one output
    for (int out : step.outputs) {
      const PlanValue& v = plan.values[static_cast<size_t>(out)];
      if (v.kind != PlanValue::Kind::kArena) continue;
      TensorLifetime lt{v.nbytes(), s, std::max(s, last_read[static_cast<size_t>(out)]), -1};
      for (size_t slot = 0; options.inplace && lt.reuse < 0 && slot < step.inputs.size(); ++slot) {
        const int in = step.inputs[slot];
        // A kernel's inplace_input holds only while no other input of the step reads the value.
        // A reshape's output is its input's bytes: it takes them over whatever its shape.
        const bool relabels = step.schema->is_same_bytes() && slot == 0 && out == step.outputs[0];
        const bool may_share = step.schema->is_elementwise() || relabels ||
                               (out == step.outputs[0] && static_cast<int>(slot) == step.inplace_input &&
                                std::count(step.inputs.begin(), step.inputs.end(), in) == 1);
        if (in < 0 || !may_share) continue;
        const PlanValue& iv = plan.values[static_cast<size_t>(in)];
        if (iv.kind != PlanValue::Kind::kArena || last_read[static_cast<size_t>(in)] != s) continue;
        if (iv.info.dtype != v.info.dtype) continue;
        if (relabels ? iv.nbytes() != v.nbytes() : iv.info.shape != v.info.shape) continue;
        if (!same_layout(iv.layout, v.layout)) continue;
        if (std::find(given_away.begin(), given_away.end(), in) != given_away.end()) continue;
        given_away.push_back(in);
        lt.reuse = lifetime_of[static_cast<size_t>(in)];
      }
      lifetime_of[static_cast<size_t>(out)] = static_cast<int>(lifetimes.size());
      lifetimes.push_back(lt);
      arena_values.push_back(out);
    }
  }
  const MemoryPlan mp = plan_memory(lifetimes, options.share_memory);
  for (size_t i = 0; i < arena_values.size(); ++i)
    plan.values[static_cast<size_t>(arena_values[i])].offset = mp.offsets[i];
  plan.arena_bytes = mp.stats.planned_bytes;
  plan.memory = mp.stats;
}

// compile's body, on a graph of its own; `release` (may be null): see ConstantReleaser.
std::shared_ptr<const Plan> compile_graph(Graph g, const CompileOptions& options,
                                          const ConstantReleaser* release) {
  check_ops_known(g);
  g.verify();
  g.infer_shapes();

  auto plan = std::make_shared<Plan>();
  plan->name = g.name;
  std::unordered_map<const Value*, int> id_of;
  auto add_value = [&](const Value* v, PlanValue::Kind kind, int index) {
    PlanValue pv{v->name, concrete_info(g, v), kind, index, 0};
    id_of[v] = static_cast<int>(plan->values.size());
    plan->values.push_back(std::move(pv));
    return id_of[v];
  };
  // An input that also has an initializer (older ONNX exporters list weights as inputs) is a
  // constant: callers pass only the inputs that have no value.
  for (const Value* v : g.initializers()) {
    add_value(v, PlanValue::Kind::kConstant, static_cast<int>(plan->constants.size()));
    plan->constants.push_back(v->constant.contiguous());
  }
  for (const Value* v : g.inputs()) {
    if (v->is_constant()) continue;
    plan->inputs.push_back(add_value(v, PlanValue::Kind::kInput, static_cast<int>(plan->inputs.size())));
  }

  const std::vector<Value*>& outputs = g.outputs();
  // A value in a backend layout gets at most one row-major copy, shared by every reader that
  // needs one.
  std::unordered_map<int, int> row_major_copy;
  const auto row_major_of = [&](int id) {
    if (id < 0 || plan->values[static_cast<size_t>(id)].layout == nullptr) return id;
    if (auto it = row_major_copy.find(id); it != row_major_copy.end()) return it->second;
    PlanValue copy = plan->values[static_cast<size_t>(id)];
    PlanStep step;
    step.label = "Reorder '" + copy.name + "' (" + copy.layout->describe() + " to row-major)";
    step.schema = &layout_conversion_schema();
    KernelChoice conversion = copy.layout->to_row_major();
    step.kernel = std::move(conversion.kernel);
    step.make_state = std::move(conversion.make_state);
    step.provider = "layout";
    step.inputs = {id};
    copy.layout = nullptr;
    const int copy_id = static_cast<int>(plan->values.size());
    plan->values.push_back(std::move(copy));
    step.outputs = {copy_id};
    plan->steps.push_back(std::move(step));
    row_major_copy[id] = copy_id;
    return copy_id;
  };
  std::string missing_kernels;
  int num_missing = 0;
  // Per constant (by its index in plan->constants): the steps still to read it; a constant that is
  // a graph input or output is read as given, so never let go, and neither is a view into a larger
  // block (a rebuild makes the tensor's own bytes, not the block's).
  std::vector<int> readers_left(plan->constants.size(), 0);
  std::vector<Value*> constant_value(plan->constants.size(), nullptr);
  const auto constant_index = [&](int id) {
    const PlanValue& pv = plan->values[static_cast<size_t>(id)];
    return pv.kind == PlanValue::Kind::kConstant ? pv.index : -1;
  };
  for (Value* v : g.initializers()) {
    const auto c = static_cast<size_t>(constant_index(id_of.at(v)));
    constant_value[c] = v;
    const bool fed_or_returned = std::find(g.inputs().begin(), g.inputs().end(), v) != g.inputs().end() ||
                                 std::find(outputs.begin(), outputs.end(), v) != outputs.end();
    const bool whole = v->constant.offset() == 0 && v->constant.is_contiguous() &&
                       v->constant.storage()->nbytes() == v->constant.nbytes();
    if (fed_or_returned || !whole) readers_left[c] = -1;
  }
  for (const Node* n : g.nodes())
    for (const Value* in : n->inputs)
      if (in != nullptr && in->is_constant()) {
        const auto c = static_cast<size_t>(constant_index(id_of.at(in)));
        if (readers_left[c] >= 0) ++readers_left[c];
      }
  // After a step whose kernel keeps its own copy of a constant: let the constant go once no
  // other step is left to read it (a step that reads it as given keeps it forever).
  const auto owned_by = [&](const PlanStep& step, KernelChoice& choice) {
    std::vector<bool> owned(step.inputs.size(), false);
    for (auto& [input, rebuild] : choice.owned_constants) owned[static_cast<size_t>(input)] = true;
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      if (step.inputs[i] < 0 || constant_index(step.inputs[i]) < 0) continue;
      const auto c = static_cast<size_t>(constant_index(step.inputs[i]));
      if (readers_left[c] < 0) continue;
      readers_left[c] = owned[i] ? readers_left[c] - 1 : -1;
      if (readers_left[c] != 0 || release == nullptr) continue;
      Value* v = constant_value[c];
      for (auto& [input, rebuild] : choice.owned_constants) {
        if (static_cast<size_t>(input) != i) continue;
        ReleasedConstant released{v->constant.storage().get(), v->constant.shape(), v->constant.dtype(),
                                  std::move(rebuild)};
        v->constant = Tensor();
        plan->constants[c] = Tensor();
        (*release)(std::move(released));
        break;
      }
    }
  };
  for (const Node* n : g.topological_order()) {
    PlanStep step;
    step.label = n->label();
    step.schema = &n->schema();
    step.attrs = bind_node_attrs(g, *n);
    for (const Value* in : n->inputs) step.inputs.push_back(in ? id_of.at(in) : -1);
    KernelQuery query{*n, step.attrs, {}, {}, options.precision};
    for (int id : step.inputs)
      query.input_layouts.push_back(id >= 0 ? plan->values[static_cast<size_t>(id)].layout : nullptr);
    for (const Value* out : n->outputs)
      query.output_row_major.push_back(std::find(outputs.begin(), outputs.end(), out) != outputs.end());
    KernelChoice choice = ask_providers(query, options, step.provider);
    const bool any_layout = std::any_of(query.input_layouts.begin(), query.input_layouts.end(),
                                        [](const LayoutPtr& l) { return l != nullptr; });
    if (!choice && any_layout) {
      // No provider takes these layouts: read row-major copies instead.
      for (int& id : step.inputs) id = row_major_of(id);
      std::fill(query.input_layouts.begin(), query.input_layouts.end(), nullptr);
      choice = ask_providers(query, options, step.provider);
    }
    if (!choice) {
      step.provider = reference_kernels().name();
      choice.kernel = reference_kernels().choose_kernel(*n, step.attrs);
    }
    owned_by(step, choice);
    step.kernel = std::move(choice.kernel);
    step.make_state = std::move(choice.make_state);
    step.inplace_input = choice.inplace_input;
    if (!step.kernel) missing_kernels += (num_missing++ ? ", " : "") + n->label();
    for (size_t i = 0; i < n->outputs.size(); ++i) {
      const bool is_output = query.output_row_major[i];
      const int id =
          add_value(n->outputs[i], is_output ? PlanValue::Kind::kOutput : PlanValue::Kind::kArena, -1);
      if (i < choice.output_layouts.size() && choice.output_layouts[i] != nullptr) {
        KILN_CHECK(!is_output, ErrorCode::kInternal, graph_label(g), ": ", n->label(), ": provider '",
                   step.provider, "' wrote graph output '", n->outputs[i]->name,
                   "' in a non-row-major layout");
        plan->values[static_cast<size_t>(id)].layout = choice.output_layouts[i];
      }
      step.outputs.push_back(id);
    }
    plan->steps.push_back(std::move(step));
  }
  KILN_CHECK(num_missing == 0, ErrorCode::kUnsupported, graph_label(g), ": no kernel for ", num_missing,
             " node(s): ", missing_kernels);
  for (const Value* out : outputs) plan->outputs.push_back(id_of.at(out));
  plan_arena(*plan, options);
  return plan;
}

}  // namespace

std::shared_ptr<const Plan> compile(const Graph& source, const CompileOptions& options) {
  return compile_graph(source.clone(), options, nullptr);
}

std::shared_ptr<const Plan> compile(Graph&& graph, const CompileOptions& options,
                                    const ConstantReleaser& release) {
  return compile_graph(std::move(graph), options, &release);
}

}  // namespace kiln::runtime
