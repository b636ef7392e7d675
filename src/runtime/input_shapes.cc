// bind_inputs(): makes a graph's free dimensions (a batch size, an image size), and the values
// that decide shapes, concrete so that it can be compiled; shape_value_inputs(): which inputs'
// values decide shapes.
#include <unordered_set>

#include "graph/passes/passes.h"
#include "runtime/graph_checks.h"
#include "runtime/plan.h"

namespace kiln::runtime {

namespace {

bool fits(const Shape& declared, const Shape& given) {
  if (declared.ndim() != given.ndim()) return false;
  for (int i = 0; i < declared.ndim(); ++i)
    if (declared[i] != Shape::kUnknown && declared[i] != given[i]) return false;
  return true;
}

graph::Value* find_input(graph::Graph& g, const std::string& name, const std::string& where) {
  std::string names;
  for (graph::Value* v : g.inputs()) {
    if (v->name == name) return v;
    names += (names.empty() ? "'" : ", '") + v->name + "'";
  }
  raise(ErrorCode::kNotFound, where, ": no input named '", name, "' (the inputs are ",
        names.empty() ? std::string("none") : names, ")");
}

}  // namespace

graph::Graph bind_inputs(const graph::Graph& source, const InputBinding& binding) {
  check_ops_known(source);
  graph::Graph g = source.clone();
  const std::string where = graph_label(g);
  for (const auto& [name, shape] : binding.shapes) {
    graph::Value* input = find_input(g, name, where);
    KILN_CHECK(!input->is_constant(), ErrorCode::kInvalidArgument, where, ": input '", name,
               "' has an initializer, so its shape is fixed at ", input->info->shape);
    KILN_CHECK(shape.is_known(), ErrorCode::kInvalidArgument, where, ": input '", name, "': the given shape ",
               shape, " is not concrete");
    // An input declared without a type (an MXNet variable with neither __shape__ nor __dtype__, an
    // ONNX input without a shape) takes the caller's element type, or float32, MXNet's default.
    if (!input->info) {
      const auto dtype = binding.untyped_dtypes.find(name);
      input->info =
          ops::TensorInfo{dtype == binding.untyped_dtypes.end() ? DType::kFloat32 : dtype->second, shape};
    }
    KILN_CHECK(input->info->kind == ops::ValueKind::kTensor, ErrorCode::kTypeMismatch, where, ": input '",
               name, "': expected ", ops::describe_info(*input->info), ", got a tensor");
    KILN_CHECK(fits(input->info->shape, shape), ErrorCode::kShapeMismatch, where, ": input '", name,
               "': expected ", input->info->shape, ", got ", shape);
    input->info->shape = shape;
  }
  for (const auto& [name, info] : binding.non_tensors) {
    graph::Value* input = find_input(g, name, where);
    if (input->info) {
      const bool given_sequence = info.kind == ops::ValueKind::kSequence;
      KILN_CHECK(given_sequence == (input->info->kind == ops::ValueKind::kSequence), ErrorCode::kTypeMismatch,
                 where, ": input '", name, "': expected ", ops::describe_info(*input->info), ", got ",
                 given_sequence ? "a sequence" : "a tensor");
      KILN_CHECK(!given_sequence || input->info->dtype == info.dtype, ErrorCode::kTypeMismatch, where,
                 ": input '", name, "': expected ", ops::describe_info(*input->info), ", got ",
                 ops::describe_info(info));
      KILN_CHECK(given_sequence || input->info->optional, ErrorCode::kInvalidArgument, where, ": input '",
                 name, "': expected ", ops::describe_info(*input->info), ", got no value");
      input->info->optional |= info.optional;
    } else {
      input->info = info;
    }
  }
  for (const auto& [name, value] : binding.values) {
    graph::Value* input = find_input(g, name, where);
    // A copy: the caller may change its tensor after the call, and a plan keeps this one.
    graph::Value* constant = g.add_initializer(g.fresh_name(name + "/value"), value.contiguous().clone());
    g.replace_all_uses(input, constant);
  }
  // With unknowns allowed, a shape an importer or an earlier inference left on a value may not
  // hold for these inputs: only what is inferred now counts.
  if (binding.allow_unknown)
    for (graph::Node* n : g.nodes())
      for (graph::Value* out : n->outputs) out->info.reset();
  // Exported models compute sizes from shapes (Shape -> Gather -> Concat -> Reshape, with a free
  // batch dimension). Once the input shapes are concrete those values are constants: folding
  // them lets inference know every shape, and drops the nodes that only fed them.
  // An If on a condition the shapes decide (a rank check) folds too: the branch it takes is
  // inlined and folded in turn.
  graph::constant_folding_pass().run(g);
  if (graph::inline_constant_if_pass().run(g)) graph::constant_folding_pass().run(g);
  graph::dead_node_elimination_pass().run(g);
  g.infer_shapes(binding.allow_unknown);
  return g;
}

void narrow_input_shapes(graph::Graph& g, const std::map<std::string, Shape>& shapes,
                         const std::string& where, const std::string& option) {
  for (const auto& [name, shape] : shapes) {
    graph::Value* input = find_input(g, name, where);
    KILN_CHECK(!input->is_constant(), ErrorCode::kNotFound, where, ": ", option, " names '", name,
               "', which is an initializer, not an input");
    KILN_CHECK(shape.is_known(), ErrorCode::kInvalidArgument, where, ": ", option, " gives input '", name,
               "' the shape ", shape, ", which is not concrete");
    if (!input->info) {
      input->info = ops::TensorInfo{DType::kFloat32, shape};  // MXNet's default element type
      continue;
    }
    KILN_CHECK(fits(input->info->shape, shape), ErrorCode::kShapeMismatch, where, ": input '", name,
               "': expected ", input->info->shape, ", got ", shape, " (from ", option, ")");
    input->info->shape = shape;
  }
}

void bind_given(InputBinding& binding, const std::string& name, const Tensor& value, bool with_dtype) {
  if (!value.defined()) {
    binding.non_tensors.emplace(name,
                                ops::TensorInfo{DType::kFloat32, Shape{}, ops::ValueKind::kTensor, true});
  } else if (value.is_sequence()) {
    binding.non_tensors.emplace(name, ops::info_of(value));
  } else {
    binding.shapes.emplace(name, value.shape());
    if (with_dtype) binding.untyped_dtypes.emplace(name, value.dtype());
  }
}

graph::Graph bind_input_shapes(const graph::Graph& source, const std::map<std::string, Shape>& shapes,
                               const std::map<std::string, DType>& untyped_dtypes) {
  InputBinding binding;
  binding.shapes = shapes;
  binding.untyped_dtypes = untyped_dtypes;
  return bind_inputs(source, binding);
}

std::vector<const graph::Value*> shape_value_inputs(const graph::Graph& g) {
  std::vector<const graph::Value*> pending;
  for (const graph::Node* node : g.nodes()) {
    const ops::OpSchema& schema = node->schema();
    if (schema.is_data_dependent_shape()) continue;
    const auto& specs = schema.inputs();
    for (size_t i = 0; i < node->inputs.size() && !specs.empty(); ++i)
      if (node->inputs[i] != nullptr && specs[std::min(i, specs.size() - 1)].value_sets_shape)
        pending.push_back(node->inputs[i]);
  }
  std::unordered_set<const graph::Value*> seen;
  std::unordered_set<const graph::Value*> found;
  while (!pending.empty()) {
    const graph::Value* v = pending.back();
    pending.pop_back();
    if (v->is_constant() || !seen.insert(v).second) continue;
    if (v->producer == nullptr) {
      found.insert(v);
    } else if (!v->producer->schema().is_shapes_only() && !v->producer->schema().is_data_dependent_shape()) {
      for (const graph::Value* in : v->producer->inputs)
        if (in != nullptr) pending.push_back(in);
    }
  }
  std::vector<const graph::Value*> inputs;
  for (const graph::Value* v : g.inputs())
    if (found.count(v)) inputs.push_back(v);
  return inputs;
}

}  // namespace kiln::runtime
