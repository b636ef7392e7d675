// Types for the values shape inference leaves unknown, which an ONNX file still needs: the checker
// requires every graph output to have an element type and a shape (a rank, its dims may be free).
//
// Inference stops at a node whose output shape depends on values computed at run time: with a free
// batch dimension, a Reshape to Concat(Shape(x)[0], 8, 64) has an unknown shape, and so has
// everything after it. Probing recovers those shapes: the graph is copied with every free input
// dimension set to a size, constants are folded (which evaluates the shape arithmetic) and shapes
// inferred; this is repeated for a few sizes. A value gets the dtype and rank every probe agrees
// on, and a dimension is static only where every probe agrees on it, at least two probes having
// succeeded (a probe whose sizes the model rejects, a kernel larger than the image, is ignored).
#pragma once

#include "graph/graph.h"

namespace kiln::onnx {

// Sets Value::info on values of `graph` that have none, where probing determines it.
void infer_unknown_types_by_probing(graph::Graph& graph);

// The dtype of output `output` of `node` when nothing determined its type: ops that make a new
// type (comparisons, Shape, Cast, ...) give theirs, any other op the dtype of its data input.
DType untyped_output_dtype(const graph::Node& node, int output);

}  // namespace kiln::onnx
