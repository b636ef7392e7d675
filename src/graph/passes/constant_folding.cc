// Constant folding: a node whose inputs are all constants computes the same thing on every run,
// so it is computed once, here, with the op's reference kernel, and its outputs become
// initializers. Shape and Size need only their input's shape, so they fold whenever that shape is
// fully known; that is what lets shape arithmetic (Shape -> Gather -> Concat -> Reshape) vanish.
//
// Left alone: random ops and Dropout in training mode (a different result each run), ops without
// a reference kernel, and nodes whose outputs would exceed ConstantFoldingOptions::max_output_bytes.
// The inputs of a folded node are not removed here; dead-node elimination does that. Needs no
// shapes beforehand: it infers them itself as it goes (see constant_folding_pass).
#include <optional>

#include "graph/passes/passes.h"
#include "ops/infer_util.h"

namespace kiln::graph {
namespace {

size_t total_bytes(const std::vector<TensorInfo>& infos) {
  size_t bytes = 0;
  for (const TensorInfo& info : infos)
    bytes += static_cast<size_t>(info.shape.numel()) * dtype_size(info.dtype);
  return bytes;
}

// Shape or Size of a value of fully known shape. The kernels read only the input's shape, so
// they get a view of that shape over a single element (zero strides) instead of real data;
// run_reference would make it contiguous, i.e. allocate the whole tensor, so the kernel is
// called directly.
std::optional<std::vector<Tensor>> fold_shape_query(const Node& n, const Attrs& attrs) {
  const Value* x = n.inputs[0];
  if (!x->info || !x->info->shape.is_known()) return std::nullopt;
  const ops::OpSchema& schema = n.schema();
  const TensorInfo& info = *x->info;
  const auto out_infos = schema.infer_types(attrs, {info}, {nullptr}, static_cast<int>(n.outputs.size()));
  std::vector<Tensor> inputs{
      Tensor::zeros(Shape{1}, info.dtype)
          .as_strided(info.shape, std::vector<int64_t>(info.shape.dims().size(), 0), 0)};
  std::vector<Tensor> outputs;
  for (const TensorInfo& o : out_infos) outputs.push_back(Tensor::empty(o.shape, o.dtype));
  ops::KernelContext ctx{attrs, inputs, outputs};
  schema.reference_kernel()(ctx);
  return outputs;
}

// Evaluates a node whose inputs are all fixed constants, unless its outputs are too large.
std::optional<std::vector<Tensor>> fold_with_reference(const Node& n, const Attrs& attrs, size_t max_bytes) {
  std::vector<std::optional<TensorInfo>> infos;
  std::vector<const Tensor*> values;
  std::vector<Tensor> inputs;
  for (const Value* in : n.inputs) {
    infos.push_back(in ? std::optional<TensorInfo>(ops::info_of(in->constant)) : std::nullopt);
    values.push_back(in ? &in->constant : nullptr);
    inputs.push_back(in ? in->constant : Tensor());
  }
  const ops::OpSchema& schema = n.schema();
  const int num_outputs = static_cast<int>(n.outputs.size());
  if (total_bytes(schema.infer_types(attrs, infos, values, num_outputs)) > max_bytes) return std::nullopt;
  return schema.run_reference(attrs, inputs, num_outputs);
}

// Gather(Shape(x), indices) needs only the dimensions it picks: it folds when those are known,
// even while others (a free batch) are not, e.g. the 80x80 grid of a YOLO head at any batch.
std::optional<std::vector<Tensor>> fold_known_dims(const Graph& graph, const Node& gather,
                                                   const Attrs& attrs) {
  if (gather.inputs.size() != 2 || !gather.inputs[1] || !is_fixed_constant(graph, gather.inputs[1]))
    return std::nullopt;
  const Node* shape = gather.inputs[0]->producer;
  if (!shape || shape->op != "Shape" || !shape->inputs[0]->info || attrs.get_int("axis") != 0)
    return std::nullopt;
  const Shape& x = shape->inputs[0]->info->shape;
  const auto [start, end] = ops::shape_range(shape->schema().bind(shape->attrs), x.ndim());
  const Tensor& indices = gather.inputs[1]->constant;
  if (indices.dtype() != DType::kInt64 && indices.dtype() != DType::kInt32) return std::nullopt;
  std::vector<int64_t> picked;
  for (int64_t index : indices.cast(DType::kInt64).to_vector<int64_t>()) {
    const int64_t count = end - start;
    if (index < 0) index += count;
    if (index < 0 || index >= count || x[static_cast<int>(start + index)] < 0) return std::nullopt;
    picked.push_back(x[static_cast<int>(start + index)]);
  }
  return std::vector<Tensor>{Tensor::from_vector<int64_t>(picked, indices.shape())};
}

std::optional<std::vector<Tensor>> try_fold(const Graph& graph, const Node& n, size_t max_bytes) {
  if (is_nondeterministic(graph, n) || !n.schema().reference_kernel()) return std::nullopt;
  // A quantized weight stays int8 behind its DequantizeLinear: the int8 kernels read it there.
  if (n.op == "DequantizeLinear") return std::nullopt;
  const Attrs attrs = n.schema().bind(n.attrs);
  if (n.op == "Shape" || n.op == "Size") return fold_shape_query(n, attrs);
  if (n.op == "Gather") {
    if (auto dims = fold_known_dims(graph, n, attrs)) return dims;
  }
  for (const Value* in : n.inputs)
    if (in && !is_fixed_constant(graph, in)) return std::nullopt;
  // Constants are tensors: the ops that make sequences or optional values are left where they
  // are (Identity of a constant, a tensor, folds).
  if (n.schema().is_sequences_taken() && n.op != "Identity") return std::nullopt;
  return fold_with_reference(n, attrs, max_bytes);
}

bool fold_constants(Graph& graph, const ConstantFoldingOptions& options) {
  bool changed = false;
  // Topological order: a folded node's readers see constant inputs when their turn comes.
  for (Node* n : graph.topological_order()) {
    std::optional<std::vector<Tensor>> folded;
    try {
      folded = try_fold(graph, *n, options.max_output_bytes);
    } catch (const Error& e) {
      throw Error(e.code(), n->label() + ": " + e.what());
    }
    if (!folded) {
      // Keep shapes current as the walk goes, so a Shape further on sees what folding revealed.
      graph.infer_node(n, /*allow_unknown=*/true);
      continue;
    }
    for (size_t i = 0; i < n->outputs.size(); ++i) graph.make_constant(n->outputs[i], (*folded)[i]);
    // The output values live on as initializers (same names, same readers); only the node goes.
    n->outputs.clear();
    graph.remove_node(n);
    changed = true;
  }
  return changed;
}

}  // namespace

Pass constant_folding_pass(ConstantFoldingOptions options) {
  // It infers every node it does not fold, in topological order: that is whole-graph inference,
  // interleaved with folding so that shapes fixed by folded values are known to later nodes.
  return Pass{
      "constant_folding", {}, {kShapesProperty}, [options](Graph& g) { return fold_constants(g, options); }};
}

}  // namespace kiln::graph
