// simplify_unfused (passes.h): the graph as the runtime simplifies it, short of fusion, for the
// model tools (quantization, pruning) that rewrite weights and must still see Conv, Gemm and
// their activations as separate nodes.
#include "graph/pass_manager.h"
#include "graph/passes/passes.h"

namespace kiln::graph {

void simplify_unfused(Graph& g) {
  g.verify();
  PassManager passes({.max_sweeps = 4});
  passes.add(constant_folding_pass())
      .add(identity_elimination_pass())
      .add(fold_conv_batchnorm_pass())
      .add(dead_node_elimination_pass());
  passes.run(g);
  g.infer_shapes(/*allow_unknown=*/true);
}

}  // namespace kiln::graph
