// kiln run MODEL --input NAME=FILE.npy ... [--shape NAME=D0,D1,...] [--output-dir DIR]: one
// prediction, each output written as DIR/OUTPUT_NAME.npy. A model that needs its input shapes to
// be imported gets those given with --shape, else the given files' shapes (see load_model).
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli.h"
#include "kiln/npy.hpp"

namespace kiln::cli {

namespace {

struct RunArgs {
  ModelArgs model;
  std::vector<std::string> inputs, shapes;
  std::string output_dir = ".";
};

void run(const RunArgs& args) {
  const std::map<std::string, std::string> files = parse_files(args.inputs);
  std::map<std::string, Tensor> inputs;
  for (const auto& [name, path] : files) inputs.emplace(name, npy::load(path));
  std::map<std::string, Shape> shapes = parse_shapes(args.shapes);
  for (const auto& [name, tensor] : inputs) shapes.emplace(name, tensor.shape());
  std::error_code ec;
  std::filesystem::create_directories(args.output_dir, ec);
  if (ec) throw UsageError("--output-dir '" + args.output_dir + "': " + ec.message());
  const Predictor predictor = load_model(args.model, shapes);
  const std::map<std::string, Tensor> outputs = predictor.predict_named(inputs);
  for (const std::string& name : predictor.output_names()) {
    std::string file = name;
    std::replace(file.begin(), file.end(), '/', '_');  // node names may hold slashes
    const std::string path = (std::filesystem::path(args.output_dir) / (file + ".npy")).string();
    const Tensor& t = outputs.at(name);
    npy::save(path, t);
    std::cout << "wrote " << path << " (" << dtype_name(t.dtype()) << " " << t.shape() << ")\n";
  }
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand("run", "run a model on .npy inputs and write its outputs as .npy");
  add_model_args(cmd, args->model, "basic");
  cmd->add_option("--input", args->inputs, "an input, NAME=FILE.npy (one per model input)")->required();
  cmd->add_option("--shape", args->shapes,
                  "an input's shape for a model that needs it to load, NAME=D0,D1,... (default: its file's)");
  cmd->add_option("--output-dir", args->output_dir, "where OUTPUT_NAME.npy files go")->capture_default_str();
  cmd->callback([args] { run(*args); });
}

}  // namespace kiln::cli
