// A Plan is a Graph compiled for one set of concrete input shapes: the steps in topological
// order, each with its op's attributes bound and its kernel chosen; the initializers, made
// contiguous once; and for every intermediate value a byte offset in one arena.
//
// A Plan is immutable once built and is shared (std::shared_ptr<const Plan>) by any number of
// Executors, on any threads; each Executor holds the arena and runs one call at a time.
//
//   graph::Graph bound = bind_input_shapes(model, {{"data", Shape{1, 3, 224, 224}}});
//   std::shared_ptr<const Plan> plan = compile(bound);
//   Executor exec(plan);
//   std::vector<Tensor> outputs = exec.run({image});
//
// Graph outputs live outside the arena: every run allocates them fresh, and the step that
// produces one writes straight into it, so callers may keep outputs across runs and no copy
// is made. An output that is a graph input or an initializer is copied.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "ops/op_schema.h"
#include "runtime/kernel_provider.h"
#include "runtime/memory_planner.h"

namespace kiln::runtime {

struct CompileOptions {
  // Asked in order before the reference kernels (which always come last). Not owned: each
  // provider must outlive the plans compiled with it.
  std::vector<const KernelProvider*> providers;
  // Let intermediates whose lifetimes do not overlap share arena bytes.
  bool share_memory = true;
  // Let an elementwise op write over an input it is the last reader of (same shape and dtype).
  bool inplace = true;
  // Floating-point arithmetic the providers may use (see Precision).
  Precision precision = Precision::kFloat32;
};

struct PlanValue {
  enum class Kind {
    kInput,     // a graph input: the caller's tensor, bound per run
    kConstant,  // an initializer: Plan::constants[index]
    kArena,     // an intermediate: the arena bytes at `offset`
    kOutput,    // produced by a step and a graph output: allocated per run
  };
  std::string name;
  ops::TensorInfo info;  // concrete shape
  Kind kind = Kind::kArena;
  int index = -1;     // kInput: position among the graph inputs; kConstant: among Plan::constants
  size_t offset = 0;  // kArena only
  LayoutPtr layout;   // kArena only: a backend's layout, or null for row-major
  size_t nbytes() const {
    return layout ? layout->nbytes() : static_cast<size_t>(info.shape.numel()) * dtype_size(info.dtype);
  }
};

struct PlanStep {
  std::string label;  // "Conv 'conv1'": how errors name the step
  const ops::OpSchema* schema = nullptr;
  Attrs attrs;  // bound once, at compile time
  ops::KernelFn kernel;
  KernelStateFactory make_state;  // each Executor makes the kernel's state once (empty: none)
  std::string provider;           // the KernelProvider that supplied the kernel
  std::vector<int> inputs;        // value ids (into Plan::values); -1 for a missing optional input
  std::vector<int> outputs;
  int inplace_input = -1;  // KernelChoice::inplace_input of the step's kernel
};

struct Plan {
  std::string name;  // the graph's
  std::vector<PlanValue> values;
  std::vector<PlanStep> steps;    // in topological order
  std::vector<int> inputs;        // value ids of the graph inputs, in the graph's order
  std::vector<int> outputs;       // value ids of the graph outputs, in the graph's order (may repeat)
  std::vector<Tensor> constants;  // undefined where let go (see ConstantReleaser)
  size_t arena_bytes = 0;
  MemoryPlanStats memory;

  // "graph 'mlp'" (or "graph" when unnamed): how errors name the model.
  std::string label() const { return name.empty() ? std::string("graph") : "graph '" + name + "'"; }
};

// Compiles a verified graph whose input shapes are all concrete. Every unsupported op is
// listed in one kiln::Error before anything else happens; a value whose shape is still not
// concrete after inference is an error naming it and its producer.
std::shared_ptr<const Plan> compile(const graph::Graph& graph, const CompileOptions& options = {});

// A constant that compile let go: its storage (to find the caller's other references to it; never
// dereferenced), its shape and dtype, and how to rebuild it exactly from a kernel's packed copy.
struct ReleasedConstant {
  const Storage* storage = nullptr;
  Shape shape;
  DType dtype = DType::kFloat32;
  std::function<Tensor()> rebuild;
};
using ConstantReleaser = std::function<void(ReleasedConstant)>;

// compile, from a graph the caller gives up (a copy bound to input shapes, say): a constant that
// every step reading it keeps a packed copy of (KernelChoice::owned_constants), and that is no
// graph input or output, is let go as soon as its last reader is compiled, and `release` is told,
// so that a caller dropping its own references never holds every packed weight twice at once.
std::shared_ptr<const Plan> compile(graph::Graph&& graph, const CompileOptions& options,
                                    const ConstantReleaser& release);

// What bind_inputs makes concrete in a copy of a graph.
struct InputBinding {
  // Each given shape must match the declared one where that is known:
  //   "input 'data': expected (?, 3, 224, 224), got (1, 3, 200, 200)".
  // Inputs not named keep their declared shapes.
  std::map<std::string, Shape> shapes;
  // An input declared with no type at all takes the given shape and its element type from here,
  // or float32 (MXNet's default) when not named here.
  std::map<std::string, DType> untyped_dtypes;
  // Inputs whose values decide shapes (see shape_value_inputs), given for this binding: the graph
  // reads a copy of each as a constant (the input stays, unread), so the shapes they decide are
  // folded and known. A plan compiled so is right only for these values.
  std::map<std::string, Tensor> values;
  // Inputs given a sequence, or no value (an optional input left absent): they take this info,
  // and nothing of theirs is bound as a shape.
  std::map<std::string, ops::TensorInfo> non_tensors;
  // Leave the shapes that values computed at run time decide unknown (for a StagedProgram)
  // instead of failing on them; every shape left known is then inferred anew for this binding.
  bool allow_unknown = false;
};

// A copy of `graph` bound as `binding` says, shapes inferred again. Values that depend only on
// shapes (and constants) are folded, so sizes computed from a free batch dimension become known.
graph::Graph bind_inputs(const graph::Graph& graph, const InputBinding& binding);

// Adds input `name`, given `value`, to `binding`: its shape (and its element type when
// `with_dtype`: the input is declared without one), or, for a sequence or an absent value, its
// info among non_tensors.
void bind_given(InputBinding& binding, const std::string& name, const Tensor& value, bool with_dtype);

// Narrows the declared shapes of the named inputs (not initializers) to `shapes`, in place: each
// must be concrete and fit the declaration (same rank, the same size wherever that is known); an
// input declared without a type takes float32, MXNet's default. Errors start with `where` and name
// `option`, what gave the shapes ("--shape", "input_shapes").
void narrow_input_shapes(graph::Graph& graph, const std::map<std::string, Shape>& shapes,
                         const std::string& where, const std::string& option);

// bind_inputs with shapes (and dtypes for untyped inputs) only, every shape required known.
graph::Graph bind_input_shapes(const graph::Graph& graph, const std::map<std::string, Shape>& shapes,
                               const std::map<std::string, DType>& untyped_dtypes = {});

// The graph inputs whose values decide shapes: read, directly or through other nodes, by an input
// whose values shape inference reads (Reshape's shape, Resize's sizes, TopK's K, Slice's starts,
// ...), not through an op that reads only shapes (Shape, Size) and not as the data of an op whose
// sizes depend on its data (NonZero, NonMaxSuppression: those are learnt while running).
std::vector<const graph::Value*> shape_value_inputs(const graph::Graph& graph);

}  // namespace kiln::runtime
