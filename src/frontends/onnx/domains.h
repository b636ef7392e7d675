// The ONNX operator domains Kiln reads and writes besides the default one, and which of Kiln's
// ops belong to them.
#pragma once

#include <string>

namespace kiln::onnx {

// ONNX's training domain: its optimizer ops (src/ops/training_update.cc).
inline constexpr char kTrainingDomain[] = "ai.onnx.preview.training";
inline constexpr int kTrainingDomainVersion = 1;
// ONNX-ML: the classical machine-learning ops Kiln has (src/ops/ml_*.cc).
inline constexpr char kMlDomain[] = "ai.onnx.ml";
inline constexpr int kMlDomainVersion = 5;

// The ONNX domain of one of Kiln's ops: "" for the default domain.
inline std::string onnx_domain_of(const std::string& op) {
  if (op == "Adagrad" || op == "Momentum" || op == "Adam") return kTrainingDomain;
  if (op == "TreeEnsemble" || op == "Binarizer" || op == "ArrayFeatureExtractor" || op == "LabelEncoder")
    return kMlDomain;
  return "";
}

}  // namespace kiln::onnx
