// Gluon blocks (MXNet 1.x mx.gluon.Block / HybridBlock / Sequential / HybridSequential): a block
// owns parameters and child blocks and computes outputs from NDArrays; autograd records what it
// runs, so training is forward under autograd::record(), backward, Trainer::step.
//
// Names follow Gluon 1.x. A block made outside any name scope takes the prefix HINT + a
// per-thread count ("dense0_", "dense1_"); one made inside a parent's name scope takes the
// parent's prefix + HINT + the parent's own count ("hybridsequential0_dense0_"). Parameters are
// named prefix + attribute ("dense0_weight"). add<T>(...) makes the child inside the parent's
// scope, as `with net.name_scope(): net.add(...)` does:
//
//   nn::HybridSequential net;
//   net.add<nn::Dense>(256, nn::DenseOptions{.activation = "relu"});
//   net.add<nn::Dense>(10);
//   net.initialize(std::make_shared<nn::Xavier>());
//   NDArray out = net(x);
//
// save_parameters / load_parameters use Gluon's structural names ("0.weight", "1.bias"), and
// load_parameters also reads files with full names (ParameterDict::save, export's .params).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kiln/ndarray.hpp"
#include "kiln/nn/parameter.hpp"

namespace kiln::autograd {
class CachedOp;
}

namespace kiln::nn {

class Block;

// While alive, blocks made on this thread count names from zero again (as entering
// `mx.name.NameManager()`); the previous counts come back when it ends.
class [[nodiscard]] NameManager {
 public:
  NameManager();
  ~NameManager();
  NameManager(const NameManager&) = delete;
  NameManager& operator=(const NameManager&) = delete;

 private:
  std::map<std::string, int> saved_;
};

// While alive, blocks made on this thread are children of `block` by name.
class [[nodiscard]] NameScope {
 public:
  explicit NameScope(Block& block);
  ~NameScope();
  NameScope(const NameScope&) = delete;
  NameScope& operator=(const NameScope&) = delete;
};

class Block {
 public:
  virtual ~Block() = default;
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;

  // "dense0_" and "dense0".
  const std::string& prefix() const { return prefix_; }
  std::string name() const;

  NameScope name_scope() { return NameScope(*this); }

  // Registers a child; `name` (default: the child's index) is its key in save_parameters.
  template <class T>
  T& register_child(std::shared_ptr<T> child, std::string name = "") {
    T& ref = *child;
    add_child(std::move(child), std::move(name));
    return ref;
  }
  const std::vector<std::pair<std::string, std::shared_ptr<Block>>>& children() const { return children_; }

  // This block's and its descendants' parameters by full name; with `select`, only the names the
  // regular expression matches in full.
  ParameterDict collect_params(const std::string& select = "") const;
  // Gluon's structural names ("0.weight", "features.1.gamma") with their parameters.
  std::vector<std::pair<std::string, std::shared_ptr<Parameter>>> collect_params_with_prefix(
      const std::string& prefix = "") const;

  void initialize(std::shared_ptr<const Initializer> init = nullptr, Device device = cpu(),
                  bool force_reinit = false);
  void save_parameters(const std::string& path) const;
  void load_parameters(const std::string& path, Device device = cpu(), bool allow_missing = false,
                       bool ignore_extra = false);

  virtual std::vector<NDArray> forward(const std::vector<NDArray>& inputs) = 0;
  NDArray operator()(const NDArray& x);
  std::vector<NDArray> operator()(const std::vector<NDArray>& inputs) { return forward(inputs); }

 protected:
  // `hint` names the kind of block ("dense"); `prefix` replaces hint + count when given.
  explicit Block(const std::string& hint, const std::string& prefix = "");

  // A parameter named prefix + `attr` ("weight"), registered under `attr`.
  std::shared_ptr<Parameter> register_parameter(const std::string& attr, ParameterOptions options);
  // A parameter that keeps a name of its own, also its key in save_parameters (a SymbolBlock's
  // parameters are named as in its graph).
  std::shared_ptr<Parameter> register_parameter_as(const std::string& name, ParameterOptions options);
  const std::vector<std::pair<std::string, std::shared_ptr<Parameter>>>& own_params() const {
    return params_;
  }

 private:
  friend class NameScope;
  void add_child(std::shared_ptr<Block> child, std::string name);

  std::string prefix_;
  std::map<std::string, int> child_counts_;  // the name counts of children made in this scope
  std::vector<std::pair<std::string, std::shared_ptr<Parameter>>> params_;
  std::vector<std::pair<std::string, std::shared_ptr<Block>>> children_;
};

// A block whose computation is a pure function of its inputs and parameters, so it can be traced
// into a graph. Layers implement hybrid_forward; forward() first completes deferred
// initialization (infer_shape gives the parameters' shapes from the inputs).
//
// hybridize() makes forward() run the traced graph as one compiled CachedOp (per mode and input
// shapes; children run inside it). The first call with parameters still awaiting deferred
// initialization runs op by op. export_model() writes the traced predict-mode graph as an MXNet
// model (PREFIX-symbol.json, PREFIX-EPOCH.params) that kiln::Predictor and MXNet load; the block
// must have run once, which fixes the input shapes and dtypes.
class HybridBlock : public Block {
 public:
  std::vector<NDArray> forward(const std::vector<NDArray>& inputs) final;
  using Block::operator();

  void hybridize(bool active = true);
  bool hybridized() const { return hybridized_; }
  void export_model(const std::string& prefix, int epoch = 0);

 protected:
  using Block::Block;
  virtual std::vector<NDArray> hybrid_forward(const std::vector<NDArray>& inputs) = 0;
  // Sets the unknown dimensions of this block's own parameters from the inputs.
  virtual void infer_shape(const std::vector<NDArray>& inputs);

 private:
  void finish_deferred_init(const std::vector<NDArray>& inputs);
  std::vector<NDArray> run_cached(const std::vector<NDArray>& inputs);

  bool hybridized_ = false;
  std::shared_ptr<autograd::CachedOp> cached_op_;
  std::vector<std::shared_ptr<Parameter>> cached_params_;  // the CachedOp's inputs after the data
  size_t cached_num_inputs_ = 0;
  std::vector<std::pair<Shape, DType>> input_signature_;  // of the last call, for export_model
};

// Children run in order, each on the previous one's outputs.
class Sequential : public Block {
 public:
  explicit Sequential(const std::string& prefix = "");
  std::vector<NDArray> forward(const std::vector<NDArray>& inputs) override;
  using Block::operator();

  // Makes a T inside this block's name scope and appends it.
  template <class T, class... Args>
  T& add(Args&&... args) {
    auto scope = name_scope();
    return register_child(std::make_shared<T>(std::forward<Args>(args)...));
  }
  void add(std::shared_ptr<Block> block) { register_child(std::move(block)); }
  size_t size() const { return children().size(); }
  Block& operator[](size_t index) const;
};

class HybridSequential : public HybridBlock {
 public:
  explicit HybridSequential(const std::string& prefix = "");

  template <class T, class... Args>
  T& add(Args&&... args) {
    static_assert(std::is_base_of_v<HybridBlock, T>, "HybridSequential holds HybridBlocks");
    auto scope = name_scope();
    return register_child(std::make_shared<T>(std::forward<Args>(args)...));
  }
  void add(std::shared_ptr<HybridBlock> block) { register_child(std::move(block)); }
  size_t size() const { return children().size(); }
  HybridBlock& operator[](size_t index) const;

 protected:
  std::vector<NDArray> hybrid_forward(const std::vector<NDArray>& inputs) override;
};

}  // namespace kiln::nn
