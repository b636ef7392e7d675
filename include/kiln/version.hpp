// Kiln's version, and what this build of it has.
#pragma once

#include <map>
#include <string>

namespace kiln {
inline constexpr int kVersionMajor = 0;
inline constexpr int kVersionMinor = 1;
inline constexpr int kVersionPatch = 0;
inline constexpr const char* kVersion = "0.1.0";

// The optional parts of Kiln and whether this build has them: "onednn" (the oneDNN CPU
// backend), "cuda" (the CUDA backend), "java" (the Java bindings), "server" (kiln serve).
std::map<std::string, bool> build_features();

// "kiln 0.1.0 (onednn: yes, cuda: no, java: no, server: no)", as `kiln --version` prints it.
std::string version_text();

}  // namespace kiln
