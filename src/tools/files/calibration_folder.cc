// Calibration folders (kiln::quantization::npy_folder_batches, include/kiln/quantize.hpp): a file
// layer over core and .npy only, so that its fuzz target stays small.
#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <vector>

#include "kiln/error.hpp"
#include "kiln/npy.hpp"
#include "kiln/quantize.hpp"

namespace kiln::quantization {

CalibrationBatches npy_folder_batches(const std::string& folder) {
  namespace fs = std::filesystem;
  KILN_CHECK(fs::is_directory(folder), ErrorCode::kNotFound, "calibration data: '", folder,
             "' is not a folder");
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(folder))
    if (e.is_directory() || e.path().extension() == ".npy") entries.push_back(e.path());
  std::sort(entries.begin(), entries.end());
  KILN_CHECK(!entries.empty(), ErrorCode::kNotFound, "calibration data: '", folder,
             "' holds no .npy file and no folder of them");
  // One layout or the other: a folder among batch files (or a file among batch folders) would be
  // read as a batch of the wrong kind, and fail far from its cause.
  const bool folders = fs::is_directory(entries[0]);
  for (const fs::path& entry : entries) {
    KILN_CHECK(fs::is_directory(entry) == folders, ErrorCode::kInvalidArgument, "calibration data: '",
               entry.string(), "' is a ", folders ? "file" : "folder", " among ",
               folders ? "folders" : ".npy files", " in '", folder,
               "': batches are either all .npy files (a model with one input) or all folders ",
               "of INPUT_NAME.npy files");
    if (!folders) continue;
    bool has_npy = false;
    for (const auto& f : fs::directory_iterator(entry)) has_npy = has_npy || f.path().extension() == ".npy";
    KILN_CHECK(has_npy, ErrorCode::kInvalidArgument, "calibration data: the batch folder '", entry.string(),
               "' holds no .npy file");
  }
  auto next = std::make_shared<size_t>(0);
  return [entries, next](std::map<std::string, Tensor>& batch) {
    if (*next == entries.size()) return false;
    const fs::path& entry = entries[(*next)++];
    batch.clear();
    if (fs::is_directory(entry)) {
      for (const auto& f : fs::directory_iterator(entry))
        if (f.path().extension() == ".npy") batch[f.path().stem().string()] = npy::load(f.path().string());
    } else {
      batch[""] = npy::load(entry.string());  // "": the model's only input
    }
    return true;
  };
}

}  // namespace kiln::quantization
