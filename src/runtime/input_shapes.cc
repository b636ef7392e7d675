// bind_input_shapes(): makes a graph's free dimensions (a batch size, an image size) concrete
// so that it can be compiled.
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

}  // namespace

graph::Graph bind_input_shapes(const graph::Graph& source, const std::map<std::string, Shape>& shapes,
                               const std::map<std::string, DType>& untyped_dtypes) {
  check_ops_known(source);
  graph::Graph g = source.clone();
  const std::string where = graph_label(g);
  for (const auto& [name, shape] : shapes) {
    graph::Value* input = nullptr;
    std::string names;
    for (graph::Value* v : g.inputs()) {
      names += (names.empty() ? "'" : ", '") + v->name + "'";
      if (v->name == name) input = v;
    }
    KILN_CHECK(input != nullptr, ErrorCode::kNotFound, where, ": no input named '", name,
               "' (the inputs are ", names.empty() ? std::string("none") : names, ")");
    KILN_CHECK(!input->is_constant(), ErrorCode::kInvalidArgument, where, ": input '", name,
               "' has an initializer, so its shape is fixed at ", input->info->shape);
    KILN_CHECK(shape.is_known(), ErrorCode::kInvalidArgument, where, ": input '", name, "': the given shape ",
               shape, " is not concrete");
    // An input declared without a type (an MXNet variable with neither __shape__ nor __dtype__, an
    // ONNX input without a shape) takes the caller's element type, or float32, MXNet's default.
    if (!input->info) {
      const auto dtype = untyped_dtypes.find(name);
      input->info = ops::TensorInfo{dtype == untyped_dtypes.end() ? DType::kFloat32 : dtype->second, shape};
    }
    KILN_CHECK(fits(input->info->shape, shape), ErrorCode::kShapeMismatch, where, ": input '", name,
               "': expected ", input->info->shape, ", got ", shape);
    input->info->shape = shape;
  }
  // Exported models compute sizes from shapes (Shape -> Gather -> Concat -> Reshape, with a free
  // batch dimension). Once the input shapes are concrete those values are constants: folding
  // them lets inference know every shape, and drops the nodes that only fed them.
  graph::constant_folding_pass().run(g);
  graph::dead_node_elimination_pass().run(g);
  g.infer_shapes();
  return g;
}

}  // namespace kiln::runtime
