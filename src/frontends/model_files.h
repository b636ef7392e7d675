// Finding and reading a model's files: which files a model path names (an MXNet
// `NAME-symbol.json`, a prefix `NAME`, or an `.onnx` file) and reading an MXNet checkpoint's
// symbol and parameters concurrently.
#pragma once

#include <string>

#include "kiln/mxnet_format.hpp"

namespace kiln::frontends {

struct ModelFiles {
  enum class Format { kMxnet, kOnnx };
  Format format = Format::kMxnet;
  std::string name;         // the model's name: the file name without "-symbol.json" / ".onnx"
  std::string symbol_path;  // kMxnet: NAME-symbol.json; kOnnx: the .onnx file
  std::string params_path;  // kMxnet: NAME-EPOCH.params
  int epoch = -1;
};

// Resolves `model_path`. For MXNet, `epoch` >= 0 picks NAME-EPOCH.params (MXNet writes the epoch
// with four digits, "NAME-0007.params"), -1 the highest epoch found beside the symbol. Throws
// kiln::Error kNotFound naming the files looked for.
ModelFiles resolve_model_files(const std::string& model_path, int epoch = -1);

// A model's name from its symbol or model file: "dir/resnet-symbol.json" -> "resnet".
std::string model_name(const std::string& path);

struct MxnetCheckpoint {
  mxnet::MxnetSymbol symbol;
  mxnet::NamedTensors params;
};

// Reads the symbol and the parameters at the same time (the parameters on this thread, the
// symbol on another); errors from either name the file.
MxnetCheckpoint read_mxnet_checkpoint(const ModelFiles& files);

}  // namespace kiln::frontends
