// The MXNet-style symbolic API: build a network as a graph of named ops, ask it for its
// arguments, auxiliary states and shapes, save it as MXNet's -symbol.json, and bind it to run.
//
//   Symbol data = Symbol::Variable("data");
//   Symbol conv = sym::Convolution(data, {.kernel = {3, 3}, .num_filter = 32}, "conv0");
//   Symbol net = sym::Activation(conv, "relu");
//   net.list_arguments();   // {"data", "conv0_weight", "conv0_bias"}
//   Executor exe = net.simple_bind(cpu(), {{"data", Shape{1, 1, 28, 28}}});
//   exe.forward(false);
//
// Ops take MXNet's names and attributes, create their parameter variables with MXNet's names
// (`conv0_weight`, `bn0_moving_mean`, ...) and, when no name is given, are named the way MXNet
// names them (`convolution0`, `activation1`, ...). A Symbol shares its nodes with the symbols it
// was composed from; it is immutable.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/device.hpp"
#include "kiln/mxnet_format.hpp"
#include "kiln/ndarray.hpp"
#include "kiln/shape.hpp"

namespace kiln {

class Executor;

class Symbol {
 public:
  struct Node;  // one op or variable, shared between symbols
  struct Output {
    std::shared_ptr<const Node> node;
    int index = 0;
  };
  struct InferredShapes {
    std::vector<Shape> arg_shapes, out_shapes, aux_shapes;  // in list_* order
    bool complete = true;  // false when some shapes stayed unknown (they are then empty Shapes)
  };

  Symbol() = default;
  static Symbol Variable(const std::string& name, const std::map<std::string, std::string>& attrs = {});
  static Symbol Group(const std::vector<Symbol>& symbols);
  // An op node; `name` empty picks MXNet's automatic name (the op in lower case + a counter).
  // Parameter variables the op needs must already be among `inputs`.
  static Symbol Create(const std::string& op, const std::vector<Symbol>& inputs,
                       const std::map<std::string, std::string>& attrs, const std::string& name = "");
  static Symbol load(const std::string& path);
  static Symbol load_json(const std::string& json);
  static Symbol from_mxnet(const mxnet::MxnetSymbol& symbol);

  bool defined() const { return !outputs_.empty(); }
  // The name of the single op or variable this symbol is the output of.
  std::string name() const;
  Symbol operator[](int index) const;  // one output of a multi-output symbol
  const std::vector<Output>& outputs() const { return outputs_; }

  // Variables in depth-first order of the inputs, as MXNet lists them: arguments are the
  // variables that are not auxiliary states (BatchNorm's moving_mean and moving_var).
  std::vector<std::string> list_arguments() const;
  std::vector<std::string> list_outputs() const;
  std::vector<std::string> list_auxiliary_states() const;
  std::vector<std::string> list_inputs() const;  // arguments and auxiliary states, in DFS order

  // Shapes of every argument, output and auxiliary state from the shapes given (usually the
  // data's): parameter shapes are deduced from their op's data input. Shapes that cannot be
  // deduced are left empty and `complete` is false. A given shape that contradicts what the
  // op needs throws a kiln::Error naming the node.
  InferredShapes infer_shape(const std::map<std::string, Shape>& known) const;

  mxnet::MxnetSymbol to_mxnet() const;  // nodes in depth-first order, as MXNet writes them
  std::string tojson() const;
  void save(const std::string& path) const;

  // Allocates every argument and auxiliary state (zeros) with the inferred shapes (`shapes`
  // usually names the data arrays; the parameters' shapes are inferred from them), and a
  // gradient array (zeros) for every argument whose grad_req is "write" or "add" ("null": none).
  // `grad_req` is one for all arguments, or per argument name (arguments not named: "null"), as
  // in MXNet.
  Executor simple_bind(Device device, const std::map<std::string, Shape>& shapes,
                       const std::string& grad_req = "write") const;
  Executor simple_bind(Device device, const std::map<std::string, Shape>& shapes,
                       const std::map<std::string, std::string>& grad_req) const;

 private:
  std::vector<Output> outputs_;
};

Symbol operator+(const Symbol& a, const Symbol& b);
Symbol operator-(const Symbol& a, const Symbol& b);
Symbol operator*(const Symbol& a, const Symbol& b);
Symbol operator/(const Symbol& a, const Symbol& b);
Symbol operator+(const Symbol& a, double b);
Symbol operator-(const Symbol& a, double b);
Symbol operator*(const Symbol& a, double b);
Symbol operator/(const Symbol& a, double b);

// A bound symbol: arrays for every argument and auxiliary state, gradient arrays, and the outputs
// of the last forward. The first forward imports the symbol into a Graph whose inputs are all the
// arrays (data and parameters alike) and compiles it; later forwards reuse that plan, feeding the
// arrays' current values, until an array's shape or dtype changes, which compiles again. A copy
// of an Executor compiles its own plans when it first runs.
//
// Training: forward(true) runs the training form of the graph (BatchNorm with batch statistics,
// updating its moving statistics in the auxiliary arrays; Dropout dropping) and keeps what
// backward() needs; backward() runs the compiled gradient graph and writes or adds each
// argument's gradient into its gradient array, as its GradReq says.
class Executor {
 public:
  Executor(Symbol symbol, Device device, std::map<std::string, NDArray> args,
           std::map<std::string, NDArray> aux, std::map<std::string, NDArray> grads = {},
           std::map<std::string, GradReq> grad_reqs = {});
  Executor(const Executor& other);
  Executor& operator=(const Executor& other);
  Executor(Executor&&) noexcept;
  Executor& operator=(Executor&&) noexcept;
  ~Executor();

  std::map<std::string, NDArray>& arg_dict() { return args_; }
  std::map<std::string, NDArray>& aux_dict() { return aux_; }
  // The gradient arrays by argument name (arguments with grad_req "null" have none).
  std::map<std::string, NDArray>& grad_dict() { return grads_; }
  // One per argument, in list_arguments() order; undefined where grad_req is "null".
  std::vector<NDArray> grad_arrays() const;
  void forward(bool is_train = false);
  // Gradients of the outputs of the last forward(true): head_grads holds one array per output
  // (ignored for loss outputs such as SoftmaxOutput, whose gradient is defined by the layer), or
  // none, which means ones. Throws kiln::Error when no training forward ran before.
  void backward(const std::vector<NDArray>& head_grads = {});
  const std::vector<NDArray>& outputs() const { return outputs_; }

 private:
  struct Compiled;  // the imported graph's plan for one signature of array shapes and dtypes
  struct Training;  // the same for training: forward and gradient plans, and the last run's values
  void forward_training();
  std::string signature() const;
  Symbol symbol_;
  Device device_;
  std::map<std::string, NDArray> args_, aux_, grads_;
  std::map<std::string, GradReq> grad_reqs_;
  std::vector<NDArray> outputs_;
  std::unique_ptr<Compiled> compiled_;
  std::unique_ptr<Training> training_;
};

namespace sym {

struct ConvolutionParams {
  std::vector<int64_t> kernel;
  int64_t num_filter = 0;
  std::vector<int64_t> stride = {};
  std::vector<int64_t> pad = {};
  std::vector<int64_t> dilate = {};
  int64_t num_group = 1;
  bool no_bias = false;
};
Symbol Convolution(const Symbol& data, const ConvolutionParams& p, const std::string& name = "");
// The weight is (in_channels, num_filter / num_group, kernel...); no bias by default, as in MXNet.
struct DeconvolutionParams {
  std::vector<int64_t> kernel;
  int64_t num_filter = 0;
  std::vector<int64_t> stride = {};
  std::vector<int64_t> pad = {};
  std::vector<int64_t> adj = {};
  int64_t num_group = 1;
  bool no_bias = true;
};
Symbol Deconvolution(const Symbol& data, const DeconvolutionParams& p, const std::string& name = "");
Symbol FullyConnected(const Symbol& data, int64_t num_hidden, bool no_bias = false, bool flatten = true,
                      const std::string& name = "");
Symbol Activation(const Symbol& data, const std::string& act_type, const std::string& name = "");
struct PoolingParams {
  std::string pool_type = "max";
  std::vector<int64_t> kernel = {};
  std::vector<int64_t> stride = {};
  std::vector<int64_t> pad = {};
  bool global_pool = false;
  std::string pooling_convention = "valid";
};
Symbol Pooling(const Symbol& data, const PoolingParams& p, const std::string& name = "");
struct BatchNormParams {
  double eps = 1e-3;
  double momentum = 0.9;
  bool fix_gamma = true;
  bool use_global_stats = false;
};
Symbol BatchNorm(const Symbol& data, const BatchNormParams& p = {}, const std::string& name = "");
Symbol Flatten(const Symbol& data, const std::string& name = "");
Symbol Dropout(const Symbol& data, double p = 0.5, const std::string& name = "");
Symbol Concat(const std::vector<Symbol>& data, int64_t dim = 1, const std::string& name = "");
Symbol elemwise_add(const Symbol& a, const Symbol& b, const std::string& name = "");
Symbol elemwise_sub(const Symbol& a, const Symbol& b, const std::string& name = "");
Symbol elemwise_mul(const Symbol& a, const Symbol& b, const std::string& name = "");
Symbol elemwise_div(const Symbol& a, const Symbol& b, const std::string& name = "");
Symbol broadcast_add(const Symbol& a, const Symbol& b, const std::string& name = "");
Symbol broadcast_sub(const Symbol& a, const Symbol& b, const std::string& name = "");
Symbol broadcast_mul(const Symbol& a, const Symbol& b, const std::string& name = "");
Symbol broadcast_div(const Symbol& a, const Symbol& b, const std::string& name = "");
// `shape` may use MXNet's special values 0, -1, -2, -3, -4.
Symbol Reshape(const Symbol& data, const std::vector<int64_t>& shape, const std::string& name = "");
Symbol softmax(const Symbol& data, int64_t axis = -1, const std::string& name = "");
// Creates NAME_label; at inference only the softmax of `data` is computed.
Symbol SoftmaxOutput(const Symbol& data, const std::string& name = "");

}  // namespace sym
}  // namespace kiln
