// Loads and runs the op test cases written by tests/ops/tools (ONNX backend node tests and
// numpy-computed cases): one folder per case with case.json and .npy files.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kiln/tensor.hpp"

namespace kiln::testing {

enum class CaseOutcome { kPass, kFail, kUnsupported, kNoSuchOp };

struct CaseResult {
  std::string name;
  std::string op;
  CaseOutcome outcome;
  std::string detail;  // why it failed or is unsupported
};

// Runs the case in `folder` through the op's reference kernel and compares every output.
CaseResult run_case(const std::string& folder);

// Compares actual against expected: same shape and dtype; |a - e| <= atol + rtol * |e| for
// floats (NaN matches NaN, infinities must match); exact for integers and bools.
// Returns an empty string on success, else a description of the first mismatch.
std::string compare_tensors(const Tensor& actual, const Tensor& expected, double rtol, double atol);

// The op a case folder tests (read from its case.json).
std::string op_of_case(const std::string& folder);

// Folders (holding case.json) under each root of a ':'-separated list.
std::vector<std::string> find_cases(const std::string& roots);

}  // namespace kiln::testing
