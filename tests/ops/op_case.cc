#include "op_case.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "kiln/npy.hpp"
#include "ops/op_schema.h"

namespace kiln::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// An array, or a sequence of arrays ({"sequence": [entries], "dtype": ...}).
Tensor load_entry(const fs::path& folder, const json& entry) {
  const DType dtype = dtype_from_name(entry.at("dtype").get<std::string>());
  if (entry.contains("sequence")) {
    std::vector<Tensor> elements;
    for (const json& element : entry.at("sequence")) elements.push_back(load_entry(folder, element));
    return Tensor::sequence(dtype, std::move(elements));
  }
  return npy::load_as((folder / entry.at("file").get<std::string>()).string(), dtype);
}

AttrValue attr_from_json(const fs::path& folder, const json& entry) {
  const std::string type = entry.at("type");
  if (type == "int") return AttrValue(entry.at("value").get<int64_t>());
  if (type == "float") return AttrValue(entry.at("value").get<double>());
  if (type == "string") return AttrValue(entry.at("value").get<std::string>());
  if (type == "ints") return AttrValue(entry.at("value").get<std::vector<int64_t>>());
  if (type == "floats") return AttrValue(entry.at("value").get<std::vector<double>>());
  if (type == "strings") return AttrValue(entry.at("value").get<std::vector<std::string>>());
  if (type == "tensor") return AttrValue(load_entry(folder, entry));
  raise(ErrorCode::kInvalidArgument, "unknown attribute type ", type);
}

}  // namespace

std::string compare_tensors(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
  std::ostringstream os;
  if (!actual.defined()) return "no value, expected one";
  if (actual.is_sequence() || expected.is_sequence()) {
    if (actual.is_sequence() != expected.is_sequence())
      return actual.is_sequence() ? "a sequence, expected a tensor" : "a tensor, expected a sequence";
    if (actual.dtype() != expected.dtype())
      return std::string("a sequence of ") + dtype_name(actual.dtype()) + ", expected one of " +
             dtype_name(expected.dtype());
    const auto& got = actual.elements();
    const auto& want = expected.elements();
    if (got.size() != want.size())
      return std::to_string(got.size()) + " tensors, expected " + std::to_string(want.size());
    for (size_t k = 0; k < got.size(); ++k)
      if (std::string diff = compare_tensors(got[k], want[k], rtol, atol); !diff.empty())
        return "element " + std::to_string(k) + ": " + diff;
    return {};
  }
  if (actual.shape() != expected.shape()) {
    os << "shape " << actual.shape() << ", expected " << expected.shape();
    return os.str();
  }
  if (actual.dtype() != expected.dtype()) {
    os << "dtype " << dtype_name(actual.dtype()) << ", expected " << dtype_name(expected.dtype());
    return os.str();
  }
  if (is_string(expected.dtype())) {
    const auto got = actual.to_vector<std::string>(), want = expected.to_vector<std::string>();
    for (size_t i = 0; i < want.size(); ++i)
      if (got[i] != want[i])
        return "element " + std::to_string(i) + ": '" + got[i] + "', expected '" + want[i] + "'";
    return {};
  }
  const Tensor a = actual.cast(DType::kFloat64), e = expected.cast(DType::kFloat64);
  const double* pa = a.data<double>();
  const double* pe = e.data<double>();
  const bool exact = !is_floating(actual.dtype());
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = pa[i], y = pe[i];
    bool ok;
    if (std::isnan(y)) {
      ok = std::isnan(x);
    } else if (std::isinf(y)) {
      ok = x == y;
    } else if (exact) {
      ok = x == y;
    } else {
      ok = std::abs(x - y) <= atol + rtol * std::abs(y);
    }
    if (!ok) {
      os << "element " << i << ": got " << x << ", expected " << y << " (rtol " << rtol << ", atol " << atol
         << ")";
      return os.str();
    }
  }
  return {};
}

CaseResult run_case(const std::string& folder_name) {
  const fs::path folder(folder_name);
  json c;
  {
    std::ifstream in(folder / "case.json");
    c = json::parse(in);
  }
  CaseResult result{c.at("name"), c.at("op"), CaseOutcome::kPass, ""};
  if (c.contains("unsupported")) {
    result.outcome = CaseOutcome::kUnsupported;
    result.detail = c["unsupported"];
    return result;
  }
  const ops::OpSchema* schema = ops::OpRegistry::global().find(result.op);
  if (!schema) {
    result.outcome = CaseOutcome::kNoSuchOp;
    return result;
  }
  try {
    AttrMap attrs;
    for (const auto& [key, entry] : c.at("attrs").items()) attrs.emplace(key, attr_from_json(folder, entry));
    std::vector<Tensor> inputs;
    for (const auto& entry : c.at("inputs"))
      inputs.push_back(entry.is_null() ? Tensor() : load_entry(folder, entry));
    const int num_outputs = c.value("num_outputs", -1);
    const auto outputs = schema->run_reference(schema->bind(attrs), inputs, num_outputs);
    const auto& expected = c.at("outputs");
    const double rtol = c.value("rtol", 1e-5), atol = c.value("atol", 1e-6);
    for (size_t i = 0; i < expected.size(); ++i) {
      if (expected[i].is_null()) continue;
      if (i >= outputs.size()) {
        result.outcome = CaseOutcome::kFail;
        result.detail = "produced " + std::to_string(outputs.size()) + " outputs, expected " +
                        std::to_string(expected.size());
        return result;
      }
      const Tensor want = load_entry(folder, expected[i]);
      // The 16-bit floats carry about 3 (fp16) or 2 (bf16) significant digits.
      const double tol_scale = want.dtype() == DType::kBFloat16  ? 1e-2
                               : want.dtype() == DType::kFloat16 ? 1e-3
                                                                 : 0;
      const std::string diff =
          compare_tensors(outputs[i], want, std::max(rtol, tol_scale), std::max(atol, tol_scale));
      if (!diff.empty()) {
        result.outcome = CaseOutcome::kFail;
        result.detail = "output " + std::to_string(i) + ": " + diff;
        return result;
      }
    }
  } catch (const Error& e) {
    result.outcome = e.code() == ErrorCode::kUnsupported ? CaseOutcome::kUnsupported : CaseOutcome::kFail;
    result.detail = e.what();
  } catch (const std::exception& e) {
    result.outcome = CaseOutcome::kFail;
    result.detail = std::string("non-Kiln exception: ") + e.what();
  }
  return result;
}

std::string op_of_case(const std::string& folder) {
  std::ifstream in(fs::path(folder) / "case.json");
  return json::parse(in).at("op").get<std::string>();
}

std::vector<std::string> find_cases(const std::string& roots) {
  std::vector<std::string> folders;
  std::stringstream list(roots);
  std::string root;
  while (std::getline(list, root, ':')) {
    if (root.empty() || !fs::exists(root)) continue;
    for (const auto& entry : fs::directory_iterator(root))
      if (fs::exists(entry.path() / "case.json")) folders.push_back(entry.path().string());
  }
  std::sort(folders.begin(), folders.end());
  return folders;
}

}  // namespace kiln::testing
