// Model path resolution and concurrent reading of MXNet checkpoints.
#include "frontends/model_files.h"

#include <cstdio>
#include <filesystem>
#include <future>

#include "kiln/error.hpp"

namespace kiln::frontends {

namespace fs = std::filesystem;

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string params_path(const std::string& prefix, int epoch) {
  char digits[16];
  std::snprintf(digits, sizeof digits, "%04d", epoch);
  return prefix + "-" + digits + ".params";
}

// The highest N among the files PREFIX-N.params, or -1.
int highest_epoch(const std::string& prefix) {
  const fs::path base(prefix);
  const fs::path dir = base.has_parent_path() ? base.parent_path() : fs::path(".");
  const std::string stem = base.filename().string() + "-";
  int best = -1;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string file = entry.path().filename().string();
    if (file.size() <= stem.size() + 7 || file.compare(0, stem.size(), stem) != 0 ||
        !ends_with(file, ".params"))
      continue;
    const std::string number = file.substr(stem.size(), file.size() - stem.size() - 7);
    if (number.empty() || number.size() > 9 || number.find_first_not_of("0123456789") != std::string::npos)
      continue;
    best = std::max(best, std::stoi(number));
  }
  return best;
}

}  // namespace

std::string model_name(const std::string& path) {
  const std::string file = fs::path(path).filename().string();
  if (ends_with(file, "-symbol.json")) return file.substr(0, file.size() - 12);
  return fs::path(file).stem().string();
}

ModelFiles resolve_model_files(const std::string& model_path, int epoch) {
  ModelFiles files;
  if (ends_with(model_path, ".onnx")) {
    files.format = ModelFiles::Format::kOnnx;
    files.symbol_path = model_path;
    files.name = fs::path(model_path).stem().string();
    return files;
  }
  const std::string prefix =
      ends_with(model_path, "-symbol.json") ? model_path.substr(0, model_path.size() - 12) : model_path;
  files.symbol_path = prefix + "-symbol.json";
  files.name = fs::path(prefix).filename().string();
  KILN_CHECK(fs::is_regular_file(files.symbol_path), ErrorCode::kNotFound, "model '", model_path,
             "': no symbol file '", files.symbol_path,
             "' (give NAME-symbol.json, a prefix NAME, or a .onnx file)");
  files.epoch = epoch >= 0 ? epoch : highest_epoch(prefix);
  KILN_CHECK(files.epoch >= 0, ErrorCode::kNotFound, "model '", model_path, "': no parameter file '", prefix,
             "-EPOCH.params' beside the symbol");
  files.params_path = params_path(prefix, files.epoch);
  if (!fs::is_regular_file(files.params_path) && epoch >= 0) {
    // MXNet pads to four digits, but files renamed by hand may not be.
    const std::string plain = prefix + "-" + std::to_string(epoch) + ".params";
    if (fs::is_regular_file(plain)) files.params_path = plain;
  }
  KILN_CHECK(fs::is_regular_file(files.params_path), ErrorCode::kNotFound, "model '", model_path,
             "': no parameter file '", files.params_path, "' for epoch ", files.epoch);
  return files;
}

MxnetCheckpoint read_mxnet_checkpoint(const ModelFiles& files) {
  std::future<mxnet::MxnetSymbol> symbol =
      std::async(std::launch::async, [path = files.symbol_path] { return mxnet::load_symbol_json(path); });
  MxnetCheckpoint checkpoint;
  // A throw here still waits for the symbol: a std::async future's destructor joins its thread.
  checkpoint.params = mxnet::load_params(files.params_path);
  checkpoint.symbol = symbol.get();
  return checkpoint;
}

}  // namespace kiln::frontends
