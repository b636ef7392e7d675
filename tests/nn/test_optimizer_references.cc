// Kiln's optimizers against the frameworks they follow. A script per framework runs its
// optimizers for a few steps on fixed weights and gradients and prints the cases as JSON (name,
// optimizer, options, schedule, dtype, weights, gradients, the weights after each step); the same
// steps here must give the same weights.
//   tests/nn/tools/reference_optimizers.py  torch.optim's documented update rules in numpy (.venv):
//                                           SGD momentum, Nesterov, Adam, AdamW, RMSprop (plain,
//                                           centered), Adagrad; float64
//   tests/nn/tools/mxnet_optimizers.py      MXNet 1.9.1 (.venv-mxnet): rescale_grad, clip_gradient,
//                                           schedules, clip_weights, float16 with a master copy
// The test command makes both environments; a missing one fails the test, naming it.
#include <filesystem>
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kiln/nn/optimizer.hpp"
#include "nn/optimizer_test_util.h"
#include "test_support.h"

namespace kiln::testing {
namespace {

AttrMap options_of(const nlohmann::json& options) {
  AttrMap out;
  for (const auto& [key, value] : options.items()) {
    if (value.is_boolean())
      out.emplace(key, value.get<bool>());
    else
      out.emplace(key, value.get<double>());
  }
  return out;
}

std::shared_ptr<const nn::LRScheduler> schedule_of(const nlohmann::json& desc) {
  if (desc.is_null()) return nullptr;
  const nn::Warmup warmup{desc.value("warmup_steps", int64_t{0}), desc.value("warmup_begin_lr", 0.0)};
  const std::string type = desc.at("type");
  if (type == "factor")
    return std::make_shared<nn::FactorScheduler>(desc.at("step"), desc.at("factor"), 1e-8, desc.at("base_lr"),
                                                 warmup);
  if (type == "multifactor")
    return std::make_shared<nn::MultiFactorScheduler>(desc.at("steps").get<std::vector<int64_t>>(),
                                                      desc.at("factor"), desc.at("base_lr"), warmup);
  return std::make_shared<nn::CosineScheduler>(desc.at("max_update"), desc.at("base_lr"), desc.at("final_lr"),
                                               warmup);
}

// The tolerance (relative, plus as much absolute) for a case: float64 runs agree to rounding;
// Adam and AdamW there use epsilon 1e-12, whose placement differs between MXNet and PyTorch by
// about 1e-12 * 32 / |grad| of a step; float32 and float16 runs to a few units in the last place.
double tolerance_of(const nlohmann::json& c) {
  const std::string dtype = c.value("dtype", "float64");
  if (dtype == "float16") return 1e-3;
  if (dtype == "float32") return 2e-6;
  return c.at("optimizer") == "adam" || c.at("optimizer") == "adamw" ? 1e-9 : 1e-12;
}

void check_against(const std::string& venv, const std::string& script, int expected_cases) {
  const std::filesystem::path root = KILN_SOURCE_DIR;
  const std::filesystem::path python = root / venv / "bin/python";
  ASSERT_TRUE(std::filesystem::exists(python)) << "no " << venv << " environment: " << python
                                               << " is missing (scripts/setup.sh, scripts/setup-mxnet.sh)";
  int status = 0;
  const std::string command = python.string() + " " + (root / "tests/nn/tools" / script).string();
  const std::string out = run_command(command, status);
  ASSERT_EQ(status, 0) << command << " failed (its stderr is above):\n" << out;
  const nlohmann::json report = nlohmann::json::parse(out);
  const auto& cases = report.at("cases");
  ASSERT_EQ(static_cast<int>(cases.size()), expected_cases);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.at("name").get<std::string>() + " (" + report.at("reference").get<std::string>() + ")");
    const Shape shape(c.at("shape").get<std::vector<int64_t>>());
    const DType dtype = dtype_from_name(c.value("dtype", "float64"));
    auto opt = nn::create_optimizer(c.at("optimizer"), options_of(c.at("options")),
                                    schedule_of(c.value("schedule", nlohmann::json())));
    const NDArray w = array_of(c.at("w0").get<Vec>(), shape, dtype);
    nn::OptimizerState state = opt->create_state(0, w);
    const auto& grads = c.at("grads");
    const auto& expected = c.at("expected");
    for (size_t t = 0; t < grads.size(); ++t) {
      opt->update(0, w, array_of(grads[t].get<Vec>(), shape, dtype), state);
      expect_all_near(values_of(w), expected[t].get<Vec>(), tolerance_of(c), "step " + std::to_string(t + 1));
    }
  }
}

TEST(OptimizerReferences, TorchOptimRules) {
  check_against(".venv", "reference_optimizers.py", 7);
}

TEST(OptimizerReferences, MXNet) {
  check_against(".venv-mxnet", "mxnet_optimizers.py", 7);
}

}  // namespace
}  // namespace kiln::testing
