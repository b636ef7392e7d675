// The pass manager (levels, property tracking, verification, statistics, fixed point) and the
// reference interpreter the pass tests compare graphs with.
#include "graph/passes/passes.h"
#include "pass_test_util.h"

namespace kiln::graph {
namespace {

using testing::count_op;
using testing::expect_same_outputs;

std::vector<std::string> pass_names(const PassManager& pm) {
  std::vector<std::string> names;
  for (const Pass& p : pm.passes()) names.push_back(p.name);
  return names;
}

// x -> Relu ("a") -> Neg ("b") -> y
Graph chain() {
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{3}});
  Node* a = g.add_node("Relu", {x}, {}, "a");
  g.set_outputs({g.add_node("Neg", {a->outputs[0]}, {}, "b")->outputs[0]});
  return g;
}

TEST(PassManager, LevelsParseAndListTheirPasses) {
  EXPECT_EQ(parse_opt_level("none"), OptLevel::kNone);
  EXPECT_EQ(parse_opt_level("basic"), OptLevel::kBasic);
  EXPECT_EQ(parse_opt_level("all"), OptLevel::kAll);
  for (const char* bad : {"fast", "", "ALL", "2"}) {
    try {
      parse_opt_level(bad);
      FAIL() << "expected an error for '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("'" + std::string(bad) + "'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("none, basic or all"), std::string::npos) << e.what();
    }
  }
  EXPECT_STREQ(opt_level_name(OptLevel::kBasic), "basic");

  EXPECT_TRUE(PassManager::for_level(OptLevel::kNone).passes().empty());
  EXPECT_EQ(pass_names(PassManager::for_level(OptLevel::kBasic)),
            (std::vector<std::string>{"constant_folding", "inline_constant_if", "identity_elimination",
                                      "dead_node_elimination"}));
  EXPECT_EQ(PassManager::for_level(OptLevel::kBasic).options().max_sweeps, 1);
  EXPECT_EQ(pass_names(PassManager::for_level(OptLevel::kAll)),
            (std::vector<std::string>{"constant_folding", "inline_constant_if", "identity_elimination",
                                      "common_subexpression_elimination", "reshape_copied_dims",
                                      "fold_conv_batchnorm", "fuse_gelu", "dead_node_elimination"}));
  ASSERT_EQ(PassManager::for_level(OptLevel::kBasic).final_passes().size(), 1u);
  EXPECT_EQ(PassManager::for_level(OptLevel::kBasic).final_passes()[0].name, "fuse_quantized_ops");
  ASSERT_EQ(PassManager::for_level(OptLevel::kAll).final_passes().size(), 3u);
  EXPECT_EQ(PassManager::for_level(OptLevel::kAll).final_passes()[0].name, "fuse_quantized_ops");
  EXPECT_EQ(PassManager::for_level(OptLevel::kAll).final_passes()[1].name, "fuse_post_ops");
  EXPECT_EQ(PassManager::for_level(OptLevel::kAll).final_passes()[2].name, "fuse_matmul_scale_add");
  EXPECT_GT(PassManager::for_level(OptLevel::kAll).options().max_sweeps, 1);
}

TEST(PassManager, LevelNoneLeavesTheGraphAlone) {
  Graph g = chain();
  g.add_node("Identity", {g.inputs()[0]}, {}, "dead_identity");
  PassManager pm = PassManager::for_level(OptLevel::kNone);
  EXPECT_FALSE(pm.run(g));
  EXPECT_EQ(g.num_nodes(), 3u);
  EXPECT_TRUE(pm.stats().empty());
}

// Two Convs with different weights whose BatchNormalizations make the folded weights equal
// (W2 = 2 W1, s2 = s1 / 2, both exact in binary): only after folding (sweep 0) can CSE merge the
// Convs (sweep 1); sweep 2 changes nothing, which is the fixed point.
Graph twin_conv_bn() {
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{1, 2, 4, 4}});
  std::mt19937 rng(3);
  const Tensor w = testing::random_tensor(TensorInfo{DType::kFloat32, Shape{3, 2, 3, 3}}, rng);
  const std::vector<float> w1 = w.to_vector<float>();
  std::vector<float> w2 = w1;
  for (float& v : w2) v *= 2;
  Value* ones = g.add_initializer("ones", Tensor::full({3}, 1.0, DType::kFloat32));
  Value* zeros = g.add_initializer("zeros", Tensor::zeros({3}, DType::kFloat32));
  Value* beta = g.add_initializer("beta", Tensor::from_vector<float>({0.5f, -1, 2}, Shape{3}));
  std::vector<Value*> outs;
  for (int i = 0; i < 2; ++i) {
    const std::string id = std::to_string(i + 1);
    Value* wi = g.add_initializer("w" + id, Tensor::from_vector(i == 0 ? w1 : w2, Shape{3, 2, 3, 3}));
    Value* var = g.add_initializer("var" + id, Tensor::full({3}, i == 0 ? 4.0 : 16.0, DType::kFloat32));
    Node* conv = g.add_node("Conv", {x, wi}, {{"pads", {1, 1, 1, 1}}}, "conv" + id);
    outs.push_back(g.add_node("BatchNormalization", {conv->outputs[0], ones, beta, zeros, var},
                              {{"epsilon", 0.0}}, "bn" + id)
                       ->outputs[0]);
  }
  g.set_outputs({g.add_node("Add", outs, {}, "add")->outputs[0]});
  return g;
}

TEST(PassManager, LevelAllSweepsToAFixedPoint) {
  Graph g = twin_conv_bn();
  Graph before = g.clone();
  PassManagerOptions verifying;
  verifying.verify = true;
  PassManager pm = PassManager::for_level(OptLevel::kAll, verifying);
  EXPECT_TRUE(pm.run(g));
  EXPECT_EQ(pm.sweeps_run(), 3);
  EXPECT_EQ(count_op(g, "BatchNormalization"), 0u);
  EXPECT_EQ(count_op(g, "Conv"), 1u);
  const Node* add = g.find_node("add");
  EXPECT_EQ(add->inputs[0], add->inputs[1]);
  EXPECT_EQ(g.initializers().size(), 2u) << "one folded W and one folded B";
  expect_same_outputs(before, g, 1e-5, 1e-5);
  // At the fixed point another run changes nothing.
  EXPECT_FALSE(pm.run(g));
  EXPECT_EQ(pm.sweeps_run(), 1);

  Graph basic = twin_conv_bn();
  EXPECT_FALSE(PassManager::for_level(OptLevel::kBasic).run(basic));
  EXPECT_EQ(count_op(basic, "BatchNormalization"), 2u);
}

TEST(PassManager, RecordsStatsForEveryPassRun) {
  Graph g = twin_conv_bn();
  PassManager pm = PassManager::for_level(OptLevel::kAll);
  pm.run(g);
  const auto& stats = pm.stats();
  ASSERT_EQ(stats.size(), 3 * pm.passes().size() + pm.final_passes().size());
  EXPECT_EQ(stats.front().pass, "constant_folding");
  EXPECT_EQ(stats.front().nodes_before, 5u);
  EXPECT_EQ(stats.back().nodes_after, 2u);
  EXPECT_EQ(stats.back().pass, "fuse_matmul_scale_add");
  EXPECT_EQ(stats.back().sweep, 3);  // the last final pass, after the three sweeps
  for (size_t i = 0; i < stats.size(); ++i) {
    EXPECT_GE(stats[i].milliseconds, 0.0);
    if (i > 0) {
      EXPECT_EQ(stats[i].nodes_before, stats[i - 1].nodes_after);
    }
    if (!stats[i].changed) {
      EXPECT_EQ(stats[i].nodes_before, stats[i].nodes_after);
    }
  }
  const auto folded = std::find_if(stats.begin(), stats.end(),
                                   [](const PassStats& s) { return s.pass == "fold_conv_batchnorm"; });
  ASSERT_NE(folded, stats.end());
  EXPECT_TRUE(folded->changed);
  EXPECT_EQ(folded->nodes_before - folded->nodes_after, 2u);
  const std::string report = pm.stats_report();
  EXPECT_NE(report.find("fold_conv_batchnorm"), std::string::npos) << report;
  EXPECT_EQ(std::count(report.begin(), report.end(), '\n'), static_cast<long>(stats.size()));
}

TEST(PassManager, InfersShapesOnlyWhenANeedIsStale) {
  auto wipe = [](Graph& g) {
    for (Node* n : g.nodes())
      for (Value* out : n->outputs) out->info.reset();
    return true;
  };
  bool had_shapes = false;
  auto look = [&](Graph& g) {
    had_shapes = g.outputs()[0]->info.has_value();
    return false;
  };
  // A pass that changed the graph without providing "shapes" makes the next need re-infer.
  Graph g = chain();
  PassManager honest;
  honest.add({"wipe", {}, {}, wipe}).add({"look", {kShapesProperty}, {}, look});
  honest.run(g);
  EXPECT_TRUE(had_shapes);
  // One that claims to provide "shapes" is taken at its word.
  Graph h = chain();
  PassManager trusting;
  trusting.add({"infer", {kShapesProperty}, {}, [](Graph&) { return false; }})
      .add({"wipe_but_claim", {}, {kShapesProperty}, wipe})
      .add({"look", {kShapesProperty}, {}, look});
  trusting.run(h);
  EXPECT_FALSE(had_shapes);
  // Other needs must come from an earlier pass.
  Graph k = chain();
  PassManager unmet;
  unmet.add({"wants_layouts", {"layouts"}, {}, look});
  try {
    unmet.run(k);
    FAIL() << "expected an unmet need";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'wants_layouts' needs 'layouts'"), std::string::npos) << e.what();
  }
  PassManager met;
  met.add({"lays_out", {}, {"layouts"}, [](Graph&) { return false; }})
      .add({"wants_layouts", {"layouts"}, {}, look});
  EXPECT_NO_THROW(met.run(k));
}

TEST(PassManager, VerificationCatchesABrokenPass) {
  const Pass make_cycle{"make_cycle", {}, {}, [](Graph& g) {
                          g.set_input(g.find_node("a"), 0, g.find_node("b")->outputs[0]);
                          return true;
                        }};
  Graph g = chain();
  PassManagerOptions verifying;
  verifying.verify = true;
  PassManager pm(verifying);
  pm.add(make_cycle);
  try {
    pm.run(g);
    FAIL() << "expected verification to fail";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("pass 'make_cycle' left an invalid graph"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cycle"), std::string::npos) << msg;
  }
  Graph h = chain();
  PassManagerOptions trusting;
  trusting.verify = false;
  PassManager unchecked(trusting);
  unchecked.add(make_cycle);
  EXPECT_NO_THROW(unchecked.run(h));
}

TEST(PassManager, ErrorsInsideAPassNameIt) {
  Graph g = chain();
  PassManager pm;
  pm.add({"explodes", {}, {}, [](Graph&) -> bool { raise(ErrorCode::kUnsupported, "no can do"); }});
  try {
    pm.run(g);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_EQ(std::string(e.what()), "pass 'explodes': no can do");
  }
  EXPECT_THROW(pm.add({"empty", {}, {}, nullptr}), Error);
}

TEST(Evaluate, RunsTheGraphAndChecksItsInputs) {
  Graph g = chain();
  g.name = "chain";
  const auto out = evaluate(g, {{"x", Tensor::from_vector<float>({-1, 0, 2}, Shape{3})}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{0, 0, -2}));
  EXPECT_THROW(evaluate(g, {}), Error);
  EXPECT_THROW(evaluate(g, {{"x", Tensor::zeros({4}, DType::kFloat32)}}), Error);
  EXPECT_THROW(evaluate(g, {{"x", Tensor::zeros({3}, DType::kFloat64)}}), Error);
  try {
    evaluate(g, {{"x", Tensor::zeros({3}, DType::kFloat32)}, {"z", Tensor::zeros({3}, DType::kFloat32)}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no input named 'z'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln::graph
