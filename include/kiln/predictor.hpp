// kiln::Predictor: the deployment API. Load a model once, then call predict() from any number of
// threads with batches of any size.
//
//   kiln::Predictor p = kiln::Predictor::load("resnet-symbol.json", {.opt_level = "all"});
//   std::vector<kiln::Tensor> out = p.predict({image});          // inputs by position
//   auto named = p.predict_named({{"data", image}});              // inputs and outputs by name
//
// The graph is optimized once, at load. Each distinct set of input shapes (and of the values of
// small inputs that decide shapes, such as Reshape's shape or Resize's sizes given as inputs) is
// compiled once into an immutable plan and kept in a bounded LRU cache; every call borrows an
// Executor (a private workspace) from its plan's pool and gives it back, so concurrent calls never
// share memory and a call takes no lock while it runs. A model whose sizes depend on its data
// (NonZero, NonMaxSuppression) runs up to such a node, learns the sizes, and runs the rest on a
// plan for them, cached and bounded the same way. A bad input throws a kiln::Error naming the input with
// the expected and actual dtype and shape, and leaves the Predictor usable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/device.hpp"
#include "kiln/tensor.hpp"

namespace kiln {

namespace graph {
class Graph;
}

struct PredictorOptions {
  Device device = cpu();            // only the CPU runs models for now
  int threads = 0;                  // > 0: kiln::set_num_threads(threads) at load
  std::string opt_level = "basic";  // "none" | "basic" | "all": graph passes run once at load
  // "fast": the backends' kernels (oneDNN) where they cover a node, else the reference kernels;
  // "reference": only the reference kernels (the oracle the others are tested against).
  std::string kernels = "fast";
  // "fp32", or "bf16" / "fp16": float32 tensors computed in that type (with float32
  // accumulation) by the fast kernels that support it; the rest, and every input and output,
  // stay float32.
  std::string precision = "fp32";
  size_t max_cached_plans = 16;  // compiled input signatures kept (least recently used go), per stage
  int epoch = -1;                // MXNet checkpoints: the .params epoch; -1 picks the highest
  // Input shapes known before the first call, by input name: MXNet symbols that declare none
  // need them to import ops whose conversion depends on the rank (PReLU's slope, Reshape's
  // special codes); a declared shape with free dims is narrowed to them. Each must fit the
  // declaration, and calls must then give these shapes.
  std::map<std::string, Shape> input_shapes;
  // The most elements a value sized at run time may have (a NonZero or NonMaxSuppression output,
  // a shape made of input values); more is a kiln::Error naming the node.
  int64_t max_dynamic_elements = int64_t{1} << 28;
  // The most iterations a Loop runs (or a Scan walks) in one call; more is a kiln::Error naming
  // the node, so that a loop whose condition never turns false cannot hang the caller.
  int64_t max_loop_iterations = int64_t{1} << 20;
};

// An input or output as the model declares it: dims of -1 are free (e.g. the batch).
struct TensorSpec {
  std::string name;
  DType dtype = DType::kFloat32;  // a sequence's: its elements' type
  Shape shape;                    // a sequence's: () (its elements' shapes may differ)
  bool known = true;              // false when the dtype and shape are only known once inputs are given
  bool sequence = false;          // a sequence of tensors (Tensor::sequence), ONNX's sequence type
  bool optional = false;          // may be absent: an undefined Tensor (ONNX's optional type)
};

// What `spec` takes, as errors and `kiln info` say it: "float32 (1, 3, 224, 224)", "a sequence of
// int64 tensors", "an optional float32 (2)", "any tensor".
std::string describe(const TensorSpec& spec);

class Predictor {
 public:
  // Loads a model:
  //   "dir/NAME-symbol.json"  an MXNet symbol; NAME-EPOCH.params beside it (the highest epoch,
  //                           or options.epoch)
  //   "dir/NAME"              the same, by prefix
  //   "model.onnx"            an ONNX model (external data files beside it)
  // The symbol and the parameters are read concurrently.
  static Predictor load(const std::string& model_path, const PredictorOptions& options = {});
  // MXNet's form: a symbol file, its parameter file, and the shape of the data input (the one
  // variable without a parameter), as MXNet's C++ and Java predictors take them.
  Predictor(const std::string& symbol_file, const std::string& params_file, const Shape& data_shape,
            const PredictorOptions& options = {});

  // A Predictor over a graph built in memory (tests, other frontends).
  explicit Predictor(graph::Graph graph, const PredictorOptions& options = {});

  Predictor(Predictor&&) noexcept;
  Predictor& operator=(Predictor&&) noexcept;
  ~Predictor();

  // Inputs in input_names() order; outputs in output_names() order.
  std::vector<Tensor> predict(const std::vector<Tensor>& inputs) const;
  // predict({a, b}): without it a braced pair of tensors could also mean a map's iterator range.
  std::vector<Tensor> predict(std::initializer_list<Tensor> inputs) const {
    return predict(std::vector<Tensor>(inputs));
  }
  // Inputs by name (every input, no others; an optional one may be left out, empty); outputs in
  // output_names() order.
  std::vector<Tensor> predict(const std::map<std::string, Tensor>& inputs) const;
  // Inputs by name; outputs by name.
  std::map<std::string, Tensor> predict_named(const std::map<std::string, Tensor>& inputs) const;

  const std::string& name() const;
  std::vector<std::string> input_names() const;
  std::vector<std::string> output_names() const;
  const std::vector<TensorSpec>& inputs() const;
  const std::vector<TensorSpec>& outputs() const;

  // The optimized graph the plans are compiled from. The weights that compiled plans' kernels
  // hold packed (and so let go here, to keep one copy of each) are rebuilt for it, and from then
  // on kept twice: for a look at the graph, read_graph() does not make that lasting.
  const graph::Graph& graph() const;
  // Calls `read` with the optimized graph, every weight in it, one caller at a time; the weights
  // rebuilt for it are let go again afterwards. Nothing of the graph may be kept past the call.
  void read_graph(const std::function<void(const graph::Graph&)>& read) const;
  // Input-shape signatures compiled and cached now (at most options.max_cached_plans).
  size_t num_cached_plans() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln
