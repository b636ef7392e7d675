// kiln run MODEL --input NAME=FILE.npy ... [--shape NAME=D0,D1,...] [--output-dir DIR]: one
// prediction, each output written as DIR/OUTPUT_NAME.npy (a sequence as the folder
// DIR/OUTPUT_NAME of 0.npy, 1.npy, ...; a sequence input is given as such a folder). An optional
// input may be left out. A model that needs its input shapes to be imported gets those given with
// --shape, else the given files' shapes (see load_model).
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

// Writes output `name` under `dir`: a tensor as NAME.npy, a sequence as the folder NAME of
// 0.npy, 1.npy, ...; an empty optional output is only reported.
void write_output(const std::string& dir, const std::string& name, const Tensor& t) {
  std::string file = name;
  std::replace(file.begin(), file.end(), '/', '_');  // node names may hold slashes
  if (!t.defined()) {
    std::cout << name << ": no value (an empty optional)\n";
    return;
  }
  if (!t.is_sequence()) {
    const std::string path = (std::filesystem::path(dir) / (file + ".npy")).string();
    npy::save(path, t);
    std::cout << "wrote " << path << " (" << dtype_name(t.dtype()) << " " << t.shape() << ")\n";
    return;
  }
  const std::filesystem::path folder = std::filesystem::path(dir) / file;
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec) throw UsageError("cannot make '" + folder.string() + "': " + ec.message());
  for (const auto& entry : std::filesystem::directory_iterator(folder))
    if (entry.path().extension() == ".npy") std::filesystem::remove(entry.path());  // an earlier run's
  const std::vector<Tensor>& elements = t.elements();
  for (size_t k = 0; k < elements.size(); ++k)
    npy::save((folder / (std::to_string(k) + ".npy")).string(), elements[k]);
  std::cout << "wrote " << folder.string() << "/ (a sequence of " << elements.size() << " "
            << dtype_name(t.dtype()) << " tensors)\n";
}

void run(const RunArgs& args) {
  const std::map<std::string, std::string> files = parse_files(args.inputs);
  std::map<std::string, Tensor>
      inputs;  // the .npy files now; the sequence folders once the model says their type
  for (const auto& [name, path] : files)
    if (!std::filesystem::is_directory(path)) inputs.emplace(name, npy::load(path));
  std::map<std::string, Shape> shapes = parse_shapes(args.shapes);
  for (const auto& [name, tensor] : inputs) shapes.emplace(name, tensor.shape());
  std::error_code ec;
  std::filesystem::create_directories(args.output_dir, ec);
  if (ec) throw UsageError("--output-dir '" + args.output_dir + "': " + ec.message());
  const Predictor predictor = load_model(args.model, shapes);
  for (const TensorSpec& spec : predictor.inputs())
    if (const auto file = files.find(spec.name); file != files.end() && !inputs.count(spec.name))
      inputs.emplace(spec.name, load_input_file(file->second, spec));
  for (const auto& [name, path] : files) inputs.try_emplace(name);  // not an input: the Predictor names it
  const std::map<std::string, Tensor> outputs = predictor.predict_named(inputs);
  for (const std::string& name : predictor.output_names())
    write_output(args.output_dir, name, outputs.at(name));
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
