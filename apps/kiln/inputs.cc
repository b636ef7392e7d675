// Input tensors for run, bench and profile: .npy files, or random values of a known shape.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iterator>
#include <optional>
#include <random>
#include <sstream>

#include "cli.h"
#include "graph/graph.h"
#include "kiln/npy.hpp"
#include "runtime/plan.h"

namespace kiln::cli {

namespace {

// The declared shape with a free first dimension set to `batch`; nullopt if still partly free.
std::optional<Shape> default_shape(const TensorSpec& spec, int64_t batch) {
  if (!spec.known) return std::nullopt;
  Shape shape = spec.shape;
  if (shape.ndim() > 0 && shape[0] < 0) shape[0] = batch;
  for (int64_t d : shape.dims())
    if (d < 0) return std::nullopt;
  return shape;
}

void check_names(const Predictor& predictor, const std::vector<std::string>& given, const char* option) {
  const std::vector<std::string> names = predictor.input_names();
  for (const std::string& name : given) {
    if (std::find(names.begin(), names.end(), name) != names.end()) continue;
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
    throw UsageError(std::string(option) + " " + name + ": the model has no input '" + name +
                     "' (inputs: " + list + ")");
  }
}

template <class Map>
std::vector<std::string> keys(const Map& map) {
  std::vector<std::string> k;
  for (const auto& entry : map) k.push_back(entry.first);
  return k;
}

}  // namespace

Tensor load_input_file(const std::string& path, const TensorSpec& spec) {
  if (!std::filesystem::is_directory(path)) {
    if (spec.sequence)
      throw UsageError("--input " + spec.name + "=" + path +
                       ": the input is a sequence; give a folder of 0.npy, "
                       "1.npy, ...");
    return npy::load(path);
  }
  if (!spec.sequence)
    throw UsageError("--input " + spec.name + "=" + path +
                     ": a folder is a sequence, and the input is a tensor");
  const auto count = static_cast<size_t>(
      std::distance(std::filesystem::directory_iterator(path), std::filesystem::directory_iterator()));
  std::vector<Tensor> elements;
  for (size_t k = 0; k < count; ++k) {
    const std::filesystem::path file = std::filesystem::path(path) / (std::to_string(k) + ".npy");
    if (!std::filesystem::exists(file))
      throw UsageError("--input " + spec.name + "=" + path + ": a sequence folder holds 0.npy to " +
                       std::to_string(count - 1) + ".npy and nothing else; " + file.filename().string() +
                       " is missing");
    elements.push_back(npy::load(file.string()));
  }
  return Tensor::sequence(elements.empty() ? spec.dtype : elements.front().dtype(), std::move(elements));
}

std::vector<Tensor> make_inputs(const Predictor& predictor, const std::map<std::string, Shape>& shapes,
                                const std::map<std::string, std::string>& files, int64_t batch) {
  check_names(predictor, keys(shapes), "--shape");
  check_names(predictor, keys(files), "--input");
  std::mt19937 rng(42);  // fixed: runs of the same command see the same inputs
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<Tensor> inputs;
  for (const TensorSpec& spec : predictor.inputs()) {
    if (const auto file = files.find(spec.name); file != files.end()) {
      inputs.push_back(load_input_file(file->second, spec));
      continue;
    }
    if (spec.sequence)
      throw UsageError("input '" + spec.name + "' is a sequence: give it with --input " + spec.name +
                       "=DIR (DIR/0.npy, DIR/1.npy, ...)");
    if (spec.optional && !shapes.count(spec.name)) {
      inputs.emplace_back();  // an optional input left empty
      continue;
    }
    const auto given = shapes.find(spec.name);
    const std::optional<Shape> shape = given != shapes.end() ? given->second : default_shape(spec, batch);
    if (!shape)
      throw UsageError("input '" + spec.name + "' has shape " + (spec.known ? spec.shape.to_string() : "?") +
                       ": give it with --shape " + spec.name + "=D0,D1,... or --input " + spec.name +
                       "=FILE.npy");
    std::vector<float> values(static_cast<size_t>(shape->numel()));
    for (float& v : values) v = dist(rng);
    const Tensor random = Tensor::from_vector(values, *shape);
    inputs.push_back(spec.known && spec.dtype != DType::kFloat32 ? random.cast(spec.dtype) : random);
  }
  return inputs;
}

namespace {

// MemAvailable of /proc/meminfo in bytes, or nothing where it cannot be read.
std::optional<double> available_memory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  double kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return std::nullopt;
}

std::string gib(double bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(bytes < (1 << 30) ? 3 : 1) << bytes / (1 << 30) << " GiB";
  return os.str();
}

}  // namespace

void check_memory(const Predictor& predictor, const std::map<std::string, Shape>& shapes,
                  const std::string& cause) {
  if (shapes.size() != predictor.inputs().size()) return;  // not all known: nothing to weigh
  const std::optional<double> available = available_memory();
  if (!available) return;
  double inputs = 0, activations = 0, outputs = 0;
  for (const TensorSpec& spec : predictor.inputs())
    inputs += static_cast<double>(shapes.at(spec.name).numel()) *
              static_cast<double>(dtype_size(spec.known ? spec.dtype : DType::kFloat32));
  predictor.read_graph([&](const graph::Graph& graph) {
    const graph::Graph bound = runtime::bind_input_shapes(graph, shapes);
    activations = static_cast<double>(runtime::compile(bound)->memory.planned_bytes);
    for (const graph::Value* v : bound.outputs())
      if (v->info && v->info->shape.is_known())
        outputs +=
            static_cast<double>(v->info->shape.numel()) * static_cast<double>(dtype_size(v->info->dtype));
  });
  const double needed = inputs + activations + outputs;
  if (needed > *available)
    throw UsageError(cause + ": this run needs about " + gib(needed) + " (inputs " + gib(inputs) +
                     ", activations " + gib(activations) + ", outputs " + gib(outputs) + "), and " +
                     gib(*available) + " are available; use a smaller batch or shape");
}

int64_t batch_of(const Predictor& predictor, const std::map<std::string, Shape>& shapes,
                 const std::map<std::string, std::string>& files, const std::vector<Tensor>& inputs,
                 int64_t batch, bool batch_given) {
  std::string declared;
  int takers = 0;
  for (const TensorSpec& spec : predictor.inputs()) {
    declared +=
        (declared.empty() ? "" : ", ") + spec.name + " " + (spec.known ? spec.shape.to_string() : "?");
    const bool given = shapes.count(spec.name) > 0 || files.count(spec.name) > 0;
    takers += !given && spec.known && spec.shape.ndim() > 0 && spec.shape[0] < 0;
  }
  if (takers > 0) return batch;
  if (batch_given)
    throw UsageError("--batch " + std::to_string(batch) +
                     ": no input takes it (only a free first dimension not set by --shape or --input does; "
                     "inputs: " +
                     declared + "); give the shapes with --shape NAME=D0,D1,...");
  return !inputs.empty() && inputs[0].ndim() > 0 ? inputs[0].shape()[0] : 1;
}

std::map<std::string, Shape> concrete_shapes(const Predictor& predictor,
                                             const std::map<std::string, Shape>& given, int64_t batch) {
  check_names(predictor, keys(given), "--shape");
  std::map<std::string, Shape> shapes;
  for (const TensorSpec& spec : predictor.inputs()) {
    if (const auto it = given.find(spec.name); it != given.end()) {
      shapes.emplace(spec.name, it->second);
    } else if (const auto shape = default_shape(spec, batch)) {
      shapes.emplace(spec.name, *shape);
    }
  }
  return shapes;
}

}  // namespace kiln::cli
