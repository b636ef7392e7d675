// Runs every registered op against the ONNX backend node tests and Kiln's numpy cases
// (written by tests/ops/tools/generate_cases.py into the folders named by KILN_OP_CASES).
// Prints pass / fail / unsupported per op. Fails on any failing case, and on any registered op
// that no case passes (an op nothing checks is a defect).
// KILN_CASE_OPS=Add,Conv limits the run to those ops (for working on one family).
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "op_case.h"
#include "ops/control_flow.h"
#include "ops/op_schema.h"

namespace kiln::testing {
namespace {

struct Tally {
  int pass = 0, fail = 0, unsupported = 0;
};

TEST(OpCases, EveryRegisteredOpMatchesTheReferences) {
  const char* roots = std::getenv("KILN_OP_CASES");
  ASSERT_NE(roots, nullptr) << "KILN_OP_CASES must name the case folders (ctest sets it)";
  const auto folders = find_cases(roots);
  ASSERT_GT(folders.size(), 1000u) << "too few cases under " << roots << ": was generate_cases.py run?";

  std::set<std::string> only;
  if (const char* list = std::getenv("KILN_CASE_OPS")) {
    std::stringstream ss(list);
    for (std::string op; std::getline(ss, op, ',');) only.insert(op);
  }
  auto selected = [&](const std::string& op) { return only.empty() || only.count(op) > 0; };

  std::map<std::string, Tally> by_op;
  int not_registered = 0;
  for (const auto& folder : folders) {
    if (!only.empty() && !selected(op_of_case(folder))) continue;
    const CaseResult r = run_case(folder);
    switch (r.outcome) {
      case CaseOutcome::kPass:
        ++by_op[r.op].pass;
        break;
      case CaseOutcome::kFail:
        ++by_op[r.op].fail;
        ADD_FAILURE() << r.name << " (" << r.op << "): " << r.detail;
        break;
      case CaseOutcome::kUnsupported:
        ++by_op[r.op].unsupported;
        if (std::getenv("KILN_VERBOSE_CASES"))
          std::cout << "unsupported " << r.name << ": " << r.detail << "\n";
        break;
      case CaseOutcome::kNoSuchOp:
        ++not_registered;
        break;
    }
  }

  Tally total;
  std::cout << std::left << std::setw(28) << "op" << std::right << std::setw(6) << "pass" << std::setw(6)
            << "fail" << std::setw(13) << "unsupported\n";
  for (const auto& name : ops::OpRegistry::global().names()) {
    // Control flow runs subgraphs, which only the runtime can: tests/runtime/test_control_flow.cc
    // and the conformance suite (through the Predictor) check it.
    if (!selected(name) || ops::is_control_flow(name)) continue;
    const Tally t = by_op[name];
    std::cout << std::left << std::setw(28) << name << std::right << std::setw(6) << t.pass << std::setw(6)
              << t.fail << std::setw(12) << t.unsupported << "\n";
    total.pass += t.pass;
    total.fail += t.fail;
    total.unsupported += t.unsupported;
    EXPECT_GT(t.pass, 0) << "op " << name << " is registered but no case checks it";
  }
  std::cout << "total over registered ops: " << total.pass << " passed, " << total.fail << " failed, "
            << total.unsupported << " unsupported; " << not_registered
            << " cases of ops Kiln does not register\n";
}

}  // namespace
}  // namespace kiln::testing
