// kiln profile MODEL [--out trace.json] [--iters N]: runs the model with the profiler on, writes
// the Chrome trace (one event per executed node, named after it) and prints the aggregate
// table by op type and by node.
#include <iostream>
#include <memory>

#include "cli.h"
#include "kiln/profiler.hpp"

namespace kiln::cli {

namespace {

struct ProfileArgs {
  ModelArgs model;
  std::string out = "trace.json";
  int iters = 10;
  int64_t batch = 1;
  std::vector<std::string> shapes, inputs;
  CLI::Option* batch_option = nullptr;
};

void profile(const ProfileArgs& args) {
  prepare_output(args.out, "--out", args.model.model);
  const std::map<std::string, Shape> given_shapes = parse_shapes(args.shapes);
  const std::map<std::string, std::string> files = parse_files(args.inputs);
  const Predictor predictor = load_model(args.model, given_shapes);
  check_memory(predictor, concrete_shapes(predictor, given_shapes, args.batch),
               args.batch_option->count() > 0 ? "--batch " + std::to_string(args.batch) : "the input shapes");
  const std::vector<Tensor> inputs = make_inputs(predictor, given_shapes, files, args.batch);
  batch_of(predictor, given_shapes, files, inputs, args.batch, args.batch_option->count() > 0);
  predictor.predict(inputs);  // compile outside the trace

  profiler::set_config({.filename = args.out, .aggregate_stats = true});
  profiler::set_state(profiler::State::kRun);
  for (int i = 0; i < args.iters; ++i) {
    profiler::Scope call("predict");
    predictor.predict(inputs);
  }
  profiler::set_state(profiler::State::kStop);
  profiler::dump();
  std::cout << profiler::dumps(/*reset=*/true) << "wrote " << args.out << "\n";
}

}  // namespace

void add_profile_command(CLI::App& app) {
  auto args = std::make_shared<ProfileArgs>();
  CLI::App* cmd = app.add_subcommand("profile", "per-node timings of a model and a Chrome trace");
  add_model_args(cmd, args->model, "all");
  cmd->add_option("--out", args->out, "Chrome trace file")->capture_default_str();
  cmd->add_option("--iters", args->iters, "profiled calls")
      ->capture_default_str()
      ->check(whole_number(1, std::numeric_limits<int>::max()));
  args->batch_option =
      cmd->add_option("--batch", args->batch, "batch size for inputs with a free first dimension")
          ->capture_default_str()
          ->check(whole_number(1));
  cmd->add_option("--shape", args->shapes, "an input's shape, NAME=D0,D1,... (repeatable)");
  cmd->add_option("--input", args->inputs, "an input from a file, NAME=FILE.npy (repeatable)");
  cmd->callback([args] { profile(*args); });
}

}  // namespace kiln::cli
