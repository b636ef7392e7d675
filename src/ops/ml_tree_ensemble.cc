// ONNX-ML's TreeEnsemble (ai.onnx.ml opset 5): decision trees over the features of X [N, F],
// their leaves' weights aggregated per target (sum, average, min or max over the trees).
//
// Nodes are parallel attribute arrays: node i compares X[:, nodes_featureids[i]] with
// nodes_splits[i] by nodes_modes[i] (<=, <, >=, >, ==, != or set membership), and goes to
// nodes_truenodeids[i] or nodes_falsenodeids[i], which name a leaf instead of a node where
// nodes_trueleafs / nodes_falseleafs say so. A missing value (NaN) takes the true branch where
// nodes_missing_value_tracks_true says so. Set-membership nodes take their sets from
// membership_values, NaN-separated, in the order the trees are walked (true branch first), as the
// spec's reference reads them. A root whose two branches are the same leaf is a one-leaf tree.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <type_traits>

#include "core/thread_pool.h"
#include "infer_util.h"

namespace kiln::ops {
namespace {

enum class SplitMode : uint8_t { kLeq, kLt, kGte, kGt, kEq, kNeq, kMember };
enum class Aggregate { kAverage, kSum, kMin, kMax };
enum class PostTransform { kNone, kSoftmax, kLogistic, kSoftmaxZero, kProbit };

struct TreeNode {
  int64_t feature = 0;
  SplitMode mode = SplitMode::kLeq;
  double split = 0;
  std::set<double> members;
  bool missing_goes_true = false;
  int64_t child[2] = {0, 0};  // [false, true]: a node or a leaf index
  bool child_is_leaf[2] = {false, false};
};

struct Forest {
  std::vector<TreeNode> nodes;
  std::vector<int64_t> roots;
  std::vector<bool> root_is_leaf;
  std::vector<double> leaf_weights;
  std::vector<int64_t> leaf_targets;
  int64_t targets = 0;
};

std::vector<double> tensor_values(const Attrs& attrs, const char* name) {
  return attrs.get_tensor(name).cast(DType::kFloat64).to_vector<double>();
}

Forest read_forest(const Attrs& attrs) {
  Forest f;
  const auto& features = attrs.get_ints("nodes_featureids");
  const std::vector<double> splits = tensor_values(attrs, "nodes_splits");
  const std::vector<double> modes = tensor_values(attrs, "nodes_modes");
  const auto& true_ids = attrs.get_ints("nodes_truenodeids");
  const auto& false_ids = attrs.get_ints("nodes_falsenodeids");
  const auto& true_leafs = attrs.get_ints("nodes_trueleafs");
  const auto& false_leafs = attrs.get_ints("nodes_falseleafs");
  const size_t n = features.size();
  for (const auto& [name, size] :
       {std::pair{"nodes_splits", splits.size()}, std::pair{"nodes_modes", modes.size()},
        std::pair{"nodes_truenodeids", true_ids.size()}, std::pair{"nodes_falsenodeids", false_ids.size()},
        std::pair{"nodes_trueleafs", true_leafs.size()}, std::pair{"nodes_falseleafs", false_leafs.size()}})
    KILN_CHECK(size == n, ErrorCode::kInvalidArgument, "attribute '", name, "': ", size, " entries for ", n,
               " nodes (nodes_featureids)");
  std::vector<int64_t> missing(n, 0);
  if (attrs.has("nodes_missing_value_tracks_true"))
    missing = attrs.get_ints("nodes_missing_value_tracks_true");
  KILN_CHECK(missing.size() == n, ErrorCode::kInvalidArgument,
             "attribute 'nodes_missing_value_tracks_true': ", missing.size(), " entries for ", n, " nodes");
  f.leaf_weights = tensor_values(attrs, "leaf_weights");
  f.leaf_targets = attrs.get_ints("leaf_targetids");
  KILN_CHECK(f.leaf_targets.size() == f.leaf_weights.size(), ErrorCode::kInvalidArgument,
             "attribute 'leaf_targetids': ", f.leaf_targets.size(), " entries for ", f.leaf_weights.size(),
             " leaves (leaf_weights)");
  f.targets = attrs.get_int("n_targets");
  for (int64_t t : f.leaf_targets)
    KILN_CHECK(t >= 0 && t < f.targets, ErrorCode::kInvalidArgument, "attribute 'leaf_targetids': target ", t,
               " outside n_targets = ", f.targets);
  f.nodes.resize(n);
  for (size_t i = 0; i < n; ++i) {
    TreeNode& node = f.nodes[i];
    KILN_CHECK(features[i] >= 0, ErrorCode::kInvalidArgument,
               "attribute 'nodes_featureids': negative feature ", features[i]);
    KILN_CHECK(modes[i] >= 0 && modes[i] <= 6, ErrorCode::kInvalidArgument, "attribute 'nodes_modes': mode ",
               modes[i], " of node ", i, " is not 0 (LEQ) to 6 (MEMBER)");
    node.feature = features[i];
    node.mode = static_cast<SplitMode>(static_cast<int>(modes[i]));
    node.split = splits[i];
    node.missing_goes_true = missing[i] != 0;
    node.child[0] = false_ids[i];
    node.child[1] = true_ids[i];
    node.child_is_leaf[0] = false_leafs[i] != 0;
    node.child_is_leaf[1] = true_leafs[i] != 0;
    for (int b = 0; b < 2; ++b) {
      const size_t bound = node.child_is_leaf[b] ? f.leaf_weights.size() : n;
      KILN_CHECK(node.child[b] >= 0 && static_cast<size_t>(node.child[b]) < bound,
                 ErrorCode::kInvalidArgument, "node ", i, ": its ", b ? "true" : "false", " branch ",
                 node.child[b], " is outside the ", bound, node.child_is_leaf[b] ? " leaves" : " nodes");
    }
  }
  f.roots = attrs.get_ints("tree_roots");
  // Set members, NaN-separated, in walk order (each tree from its root, true branch first).
  std::vector<double> members =
      attrs.has("membership_values") ? tensor_values(attrs, "membership_values") : std::vector<double>{};
  size_t next_member = 0;
  std::vector<bool> visited(n, false);
  const auto take_sets = [&](auto&& self, int64_t i) -> void {
    KILN_CHECK(!visited[static_cast<size_t>(i)], ErrorCode::kInvalidArgument, "node ", i,
               " is reached twice: the nodes do not form trees");
    visited[static_cast<size_t>(i)] = true;
    TreeNode& node = f.nodes[static_cast<size_t>(i)];
    if (node.mode == SplitMode::kMember) {
      KILN_CHECK(next_member < members.size(), ErrorCode::kInvalidArgument,
                 "attribute 'membership_values': too few sets for the set-membership nodes");
      for (; next_member < members.size() && !std::isnan(members[next_member]); ++next_member)
        node.members.insert(members[next_member]);
      ++next_member;  // the NaN that ends the set
    }
    for (int b : {1, 0})
      if (!node.child_is_leaf[b]) self(self, node.child[b]);
  };
  for (int64_t root : f.roots) {
    KILN_CHECK(root >= 0 && static_cast<size_t>(root) < std::max(n, f.leaf_weights.size()),
               ErrorCode::kInvalidArgument, "attribute 'tree_roots': root ", root, " is not a node");
    const bool leaf =
        static_cast<size_t>(root) < n && f.nodes[static_cast<size_t>(root)].child_is_leaf[0] &&
        f.nodes[static_cast<size_t>(root)].child_is_leaf[1] &&
        f.nodes[static_cast<size_t>(root)].child[0] == f.nodes[static_cast<size_t>(root)].child[1];
    f.root_is_leaf.push_back(leaf);
    if (leaf) {
      KILN_CHECK(static_cast<size_t>(root) < f.leaf_weights.size(), ErrorCode::kInvalidArgument,
                 "attribute 'tree_roots': one-leaf tree ", root, " has no leaf weight");
    } else {
      take_sets(take_sets, root);
    }
  }
  return f;
}

bool goes_true(const TreeNode& node, double x) {
  if (std::isnan(x) && node.missing_goes_true) return true;
  switch (node.mode) {
    case SplitMode::kLeq:
      return x <= node.split;
    case SplitMode::kLt:
      return x < node.split;
    case SplitMode::kGte:
      return x >= node.split;
    case SplitMode::kGt:
      return x > node.split;
    case SplitMode::kEq:
      return x == node.split;
    case SplitMode::kNeq:
      return x != node.split;
    case SplitMode::kMember:
      return node.members.count(x) > 0;
  }
  return false;
}

// The leaf a sample reaches from a root.
int64_t leaf_of(const Forest& f, size_t tree, const double* x, int64_t features) {
  const int64_t root = f.roots[tree];
  if (f.root_is_leaf[tree]) return root;
  int64_t i = root;
  for (;;) {
    const TreeNode& node = f.nodes[static_cast<size_t>(i)];
    KILN_CHECK(node.feature < features, ErrorCode::kOutOfRange, "node ", i, " reads feature ", node.feature,
               " of input 0 (X), which has ", features);
    const int b = goes_true(node, x[node.feature]) ? 1 : 0;
    if (node.child_is_leaf[b]) return node.child[b];
    i = node.child[b];
  }
}

void validate_post_transform(const AttrValue& value, const std::string& what) {
  const int64_t v = std::get<int64_t>(value.variant());
  KILN_CHECK(v >= 0 && v <= 4, ErrorCode::kInvalidArgument, what, ": expected 0 (NONE) to 4 (PROBIT), got ",
             v);
  KILN_CHECK(v <= 2, ErrorCode::kUnsupported, what, ": ", v == 3 ? "SOFTMAX_ZERO (3)" : "PROBIT (4)",
             " is not implemented; NONE, SOFTMAX and LOGISTIC are");
}

void validate_aggregate(const AttrValue& value, const std::string& what) {
  const int64_t v = std::get<int64_t>(value.variant());
  KILN_CHECK(v >= 0 && v <= 3, ErrorCode::kInvalidArgument, what,
             ": expected 0 (AVERAGE), 1 (SUM), 2 (MIN) or 3 (MAX), got ", v);
}

std::vector<TensorInfo> infer_tree_ensemble(InferContext& ctx) {
  const DType floats[] = {DType::kFloat32, DType::kFloat64, DType::kFloat16};
  require_dtype(ctx, 0, floats);
  require_rank(ctx, 0, 2, 2);
  const int64_t targets = ctx.attrs().get_int("n_targets");
  KILN_CHECK(targets >= 1, ErrorCode::kInvalidArgument, "attribute 'n_targets': expected at least 1, got ",
             targets);
  read_forest(ctx.attrs());  // checks the trees before anything runs
  return {TensorInfo{ctx.dtype(0), Shape{ctx.shape(0)[0], targets}}};
}

void tree_ensemble_kernel(KernelContext& ctx) {
  const Forest f = read_forest(ctx.attrs);
  const Tensor x = ctx.input(0).cast(DType::kFloat64);
  const int64_t rows = x.shape()[0], features = x.shape()[1];
  const auto aggregate = static_cast<Aggregate>(ctx.attrs.get_int("aggregate_function"));
  const auto post = static_cast<PostTransform>(ctx.attrs.get_int("post_transform"));
  // MIN and MAX start from the output type's extremes, as the reference does; a target no leaf
  // names keeps it.
  const double lowest = ctx.input(0).dtype() == DType::kFloat64 ? std::numeric_limits<double>::lowest()
                                                                : std::numeric_limits<float>::lowest();
  Tensor result = Tensor::empty(Shape{rows, f.targets}, DType::kFloat64);
  const double* px = x.data<double>();
  double* out = result.data<double>();
  parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      double* row = out + r * f.targets;
      std::fill_n(row, f.targets,
                  aggregate == Aggregate::kMin   ? -lowest
                  : aggregate == Aggregate::kMax ? lowest
                                                 : 0.0);
      for (size_t t = 0; t < f.roots.size(); ++t) {
        const auto leaf = static_cast<size_t>(leaf_of(f, t, px + r * features, features));
        double& slot = row[f.leaf_targets[leaf]];
        const double w = f.leaf_weights[leaf];
        switch (aggregate) {
          case Aggregate::kSum:
            slot += w;
            break;
          case Aggregate::kAverage:
            slot += w / static_cast<double>(f.roots.size());
            break;
          case Aggregate::kMin:
            slot = std::min(slot, w);
            break;
          case Aggregate::kMax:
            slot = std::max(slot, w);
            break;
        }
      }
      if (post == PostTransform::kLogistic) {
        for (int64_t t = 0; t < f.targets; ++t) row[t] = 1.0 / (1.0 + std::exp(-row[t]));
      } else if (post == PostTransform::kSoftmax) {
        const double top = *std::max_element(row, row + f.targets);
        double sum = 0;
        for (int64_t t = 0; t < f.targets; ++t) sum += row[t] = std::exp(row[t] - top);
        for (int64_t t = 0; t < f.targets; ++t) row[t] /= sum;
      }
    }
  });
  ctx.output(0).copy_from(result.cast(ctx.output(0).dtype()));
}

KILN_REGISTER_OP(TreeEnsemble)
    .doc(
        "ai.onnx.ml: decision trees over X [N, F] (nodes as parallel attribute arrays, leaves as "
        "leaf_weights/leaf_targetids); Y [N, n_targets] aggregates the reached leaves' weights per target "
        "(aggregate_function: 0 average, 1 sum, 2 min, 3 max), then post_transform (0 none, 1 softmax, "
        "2 logistic).")
    .input("X")
    .output("Y")
    .attr("aggregate_function", AttrType::kInt, 1, validate_aggregate)
    .required_attr("leaf_targetids", AttrType::kInts)
    .required_attr("leaf_weights", AttrType::kTensor)
    .optional_attr("membership_values", AttrType::kTensor)
    .required_attr("n_targets", AttrType::kInt)
    .required_attr("nodes_falseleafs", AttrType::kInts)
    .required_attr("nodes_falsenodeids", AttrType::kInts)
    .required_attr("nodes_featureids", AttrType::kInts)
    .optional_attr("nodes_hitrates", AttrType::kTensor)
    .optional_attr("nodes_missing_value_tracks_true", AttrType::kInts)
    .required_attr("nodes_modes", AttrType::kTensor)
    .required_attr("nodes_splits", AttrType::kTensor)
    .required_attr("nodes_trueleafs", AttrType::kInts)
    .required_attr("nodes_truenodeids", AttrType::kInts)
    .attr("post_transform", AttrType::kInt, 0, validate_post_transform)
    .required_attr("tree_roots", AttrType::kInts)
    .infer(infer_tree_ensemble)
    .kernel(tree_ensemble_kernel);

}  // namespace
}  // namespace kiln::ops
