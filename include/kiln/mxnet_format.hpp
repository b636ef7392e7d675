// Apache MXNet 1.x model files, read and written byte-exactly: the `.params` NDArray list
// (`mx.nd.save`, `Module.save_checkpoint`, gluon `export`) and the `-symbol.json` graph.
// This layer only moves the files' contents into neutral structures; turning a symbol into
// Kiln's Graph is the importer's job.
#pragma once

#include <istream>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "kiln/tensor.hpp"

namespace kiln::mxnet {

// The arrays of a `.params` file, in file order, and their names (`arg:fc1_weight`,
// `aux:bn1_moving_mean`, or plain names). `names` is empty for a file saved from a list, else
// it has one name per tensor. An undefined Tensor stands for MXNet's "none" array (an array
// whose shape was never set), which older MXNet versions could save.
struct NamedTensors {
  std::vector<std::string> names;
  std::vector<Tensor> tensors;
};

// Reads a `.params` file from a stream; `source` names it in errors. Understands every record
// layout MXNet 1.x reads: V3 (numpy shape semantics), V2 (storage type), V1 (int64 shape) and the
// legacy layout with uint32 dimensions and no magic. Throws kiln::Error kIo for malformed or
// truncated input (checked before anything is allocated) and kUnsupported for sparse arrays and
// element types Kiln does not have.
// The Kiln dtype of an mshadow type flag (0 float32 ... 12 bfloat16), as stored in .params
// records and in a variable's __dtype__ attribute. Flags Kiln lacks (int16, uint16, uint32,
// uint64) give kUnsupported, unknown flags kIo; `where` names the place in errors.
DType dtype_from_mxnet_flag(int64_t flag, const std::string& where);
// The mshadow type flag of a Kiln dtype (every Kiln dtype has one).
int32_t mxnet_flag_from_dtype(DType dtype);

NamedTensors read_params(std::istream& in, const std::string& source);
NamedTensors load_params(const std::string& path);

// Writes the layout MXNet 1.9 writes: V2 records, or V3 records for every array when one of them
// is 0-d or empty (MXNet itself can only make those under numpy shape semantics, where it writes
// V3; it then loads the file with `mx.npx.load` or inside `mx.util.np_shape(True)`). Tensors are
// saved as CPU arrays. Throws kiln::Error kInvalidArgument when names and tensors disagree in
// number, kIo when writing fails.
void write_params(std::ostream& out, const NamedTensors& params, const std::string& target);
void save_params(const std::string& path, const NamedTensors& params);

// A `-symbol.json` graph as MXNet stores it: nodes in topological order, each input an entry
// (producer node, output index, version); `op` is "null" for variables (arguments, auxiliary
// states). `attrs` on a node are MXNet's string attributes; the top-level `attrs` hold graph
// attributes such as mxnet_version ("10901").
struct MxnetSymbol {
  struct Entry {
    int node = 0;
    int index = 0;
    int version = 0;
    bool operator==(const Entry&) const = default;
  };
  struct Node {
    std::string op, name;
    std::map<std::string, std::string> attrs;
    std::vector<Entry> inputs;
    bool operator==(const Node&) const = default;
  };
  std::vector<Node> nodes;
  std::vector<int> arg_nodes;
  std::vector<Entry> heads;
  std::map<std::string, std::string> attrs;
  bool operator==(const MxnetSymbol&) const = default;
};

// Parses symbol JSON from any MXNet version: node attributes under `attrs`, or the older `attr`
// and `param` keys (merged), inputs as [node, index, version] or the older [node, index]. A file
// without mxnet_version gets "800", the version MXNet assumes for it, so that writing it back
// makes MXNet apply the same upgrades. Throws kiln::Error kIo, naming `source` and the node, for
// malformed JSON, out-of-range or forward node references and bad heads; kUnsupported for
// control-flow subgraphs and control dependencies.
MxnetSymbol parse_symbol_json(const std::string& text, const std::string& source);
MxnetSymbol load_symbol_json(const std::string& path);

// The symbol as JSON that MXNet 1.9.1 loads: `attrs` per node, three-element entries,
// node_row_ptr, and graph attributes with mxnet_version as an int (10901 when the symbol has
// none). Throws kiln::Error kInvalidArgument for a symbol that parse_symbol_json would reject.
std::string to_symbol_json(const MxnetSymbol& symbol);

}  // namespace kiln::mxnet
