// Kiln's half of the MXNet file check (tests/frontends/mxnet_files.py drives it):
//   mxnet_roundtrip DIR
// reads DIR/manifest.json, which lists the files MXNet wrote with the .npy dumps of what MXNet
// loads from them; reads every file with Kiln, compares names, dtypes, shapes and bytes with the
// dumps, and writes each file back into DIR/kiln/ for MXNet to load. Files listed as unsupported
// must fail with kiln::Error(kUnsupported). Exits non-zero on any difference.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "kiln/error.hpp"
#include "kiln/mxnet_format.hpp"
#include "kiln/npy.hpp"

namespace {

namespace fs = std::filesystem;
using kiln::Tensor;
using nlohmann::json;

int failures = 0;

void fail(const std::string& what) {
  std::cerr << "MISMATCH " << what << "\n";
  ++failures;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return ca.nbytes() == cb.nbytes() &&
         (ca.nbytes() == 0 || std::memcmp(ca.raw_data(), cb.raw_data(), ca.nbytes()) == 0);
}

// Compares one .params file with MXNet's dumps and writes it back; returns the array count.
size_t check_params(const fs::path& dir, const json& entry) {
  const std::string file = entry.at("file");
  const kiln::mxnet::NamedTensors params = kiln::mxnet::load_params((dir / file).string());
  const json& arrays = entry.at("arrays");
  const bool named = entry.at("named");
  if (params.tensors.size() != arrays.size())
    fail(file + ": " + std::to_string(params.tensors.size()) + " arrays, MXNet loads " +
         std::to_string(arrays.size()));
  if (params.names.size() != (named ? arrays.size() : 0))
    fail(file + ": " + std::to_string(params.names.size()) + " names");
  for (size_t i = 0; i < std::min(arrays.size(), params.tensors.size()); ++i) {
    const json& a = arrays[i];
    const std::string label =
        file + " array " + std::to_string(i) + " '" + a.at("name").get<std::string>() + "'";
    if (named && params.names.size() == arrays.size() && params.names[i] != a.at("name"))
      fail(label + ": Kiln reads the name '" + params.names[i] + "'");
    const Tensor expected = kiln::npy::load((dir / a.at("npy").get<std::string>()).string());
    const Tensor& actual = params.tensors[i];
    const std::string dtype = a.at("dtype");
    if (!actual.defined()) {
      fail(label + ": Kiln reads an undefined array");
    } else if (dtype_name(actual.dtype()) != dtype) {
      fail(label + ": dtype " + dtype_name(actual.dtype()) + ", MXNet has " + dtype);
    } else if (actual.shape() != expected.shape()) {
      fail(label + ": shape " + actual.shape().to_string() + ", MXNet has " + expected.shape().to_string());
    } else if (!same_bytes(actual, expected)) {
      fail(label + ": values differ");
    }
  }
  kiln::mxnet::save_params((dir / "kiln" / file).string(), params);
  return arrays.size();
}

void check_symbol(const fs::path& dir, const std::string& file) {
  const kiln::mxnet::MxnetSymbol symbol = kiln::mxnet::load_symbol_json((dir / file).string());
  const std::string text = kiln::mxnet::to_symbol_json(symbol);
  if (kiln::mxnet::parse_symbol_json(text, file + " (written)") != symbol)
    fail(file + ": written JSON parses differently");
  std::ofstream out(dir / "kiln" / file, std::ios::binary);
  out << text;
  if (!out.good()) fail(file + ": cannot write");
}

void check_unsupported(const fs::path& dir, const std::string& file) {
  try {
    kiln::mxnet::load_params((dir / file).string());
    fail(file + ": read without an error, expected kUnsupported");
  } catch (const kiln::Error& e) {
    if (e.code() != kiln::ErrorCode::kUnsupported) fail(file + ": " + e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: mxnet_roundtrip DIR (a folder made by mxnet_files.py generate)\n";
    return 2;
  }
  const fs::path dir = argv[1];
  try {
    std::ifstream in(dir / "manifest.json");
    if (!in.good())
      throw kiln::Error(kiln::ErrorCode::kIo, (dir / "manifest.json").string() + ": cannot open");
    const json manifest = json::parse(in);
    fs::create_directories(dir / "kiln");
    size_t arrays = 0;
    for (const json& entry : manifest.at("params")) arrays += check_params(dir, entry);
    for (const json& file : manifest.at("symbols")) check_symbol(dir, file);
    for (const json& file : manifest.at("unsupported")) check_unsupported(dir, file);
    std::cout << "mxnet_roundtrip: " << manifest.at("params").size() << " .params files (" << arrays
              << " arrays), " << manifest.at("symbols").size() << " symbol files, "
              << manifest.at("unsupported").size() << " unsupported files: "
              << (failures ? std::to_string(failures) + " mismatches" : "all match MXNet") << "\n";
  } catch (const std::exception& e) {
    std::cerr << "mxnet_roundtrip: " << e.what() << "\n";
    return 1;
  }
  return failures ? 1 : 0;
}
