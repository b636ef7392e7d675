// oneDNN's ConvTranspose against the reference kernel: 1 to 3 spatial axes, strides, dilations,
// groups (depthwise too), pads, output_padding, output_shape, SAME and VALID padding, with and
// without bias, bfloat16 and float16, and the cases left to the reference kernel.
#include <gtest/gtest.h>

#include <random>

#include "backends/onednn_test_util.h"

namespace kiln::onednn {
namespace {

using Ints = std::vector<int64_t>;

TEST(OnednnConvTranspose, ShapesStridesDilationsPadsAndGroups) {
  std::mt19937 rng(71);
  struct Case {
    Shape x, w;  // w: (C, M/group, k...)
    AttrMap attrs;
    bool bias;
  };
  const std::vector<Case> cases{
      {{1, 3, 5, 7}, {3, 4, 3, 3}, {}, true},
      {{2, 4, 6, 5}, {4, 5, 3, 2}, {{"strides", Ints{2, 1}}, {"pads", Ints{1, 0, 1, 1}}}, true},
      // PyTorch's usual upsampling: kernel 3, stride 2, pad 1, output_padding 1.
      {{1, 8, 7, 7},
       {8, 6, 3, 3},
       {{"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}, {"output_padding", Ints{1, 1}}},
       true},
      {{1, 6, 5, 5}, {6, 1, 3, 3}, {{"group", 6}, {"strides", Ints{2, 2}}}, true},  // depthwise
      {{2, 6, 4, 5}, {6, 2, 2, 3}, {{"group", 3}, {"dilations", Ints{2, 1}}}, false},
      {{1, 4, 6, 6}, {4, 3, 2, 2}, {{"strides", Ints{2, 2}}}, false},
      {{1, 2, 5, 4}, {2, 3, 3, 3}, {{"strides", Ints{2, 2}}, {"auto_pad", "SAME_UPPER"}}, true},
      {{1, 2, 5, 4}, {2, 3, 4, 3}, {{"strides", Ints{3, 2}}, {"auto_pad", "SAME_LOWER"}}, true},
      {{1, 2, 5, 4}, {2, 3, 3, 3}, {{"auto_pad", "VALID"}, {"strides", Ints{2, 2}}}, true},
      {{1, 3, 6, 6}, {3, 2, 3, 3}, {{"strides", Ints{2, 2}}, {"output_shape", Ints{12, 13}}}, true},
      {{2, 3, 9}, {3, 5, 4}, {{"strides", Ints{2}}, {"pads", Ints{1, 2}}}, true},  // 1-D
      {{1, 2, 3, 4, 5},
       {2, 3, 2, 3, 2},
       {{"strides", Ints{2, 1, 2}}, {"pads", Ints{0, 1, 0, 0, 1, 1}}},
       true},                                                               // 3-D
      {{1, 33, 5, 5}, {33, 17, 3, 3}, {{"pads", Ints{1, 1, 1, 1}}}, true},  // odd channels
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("x " + c.x.to_string() + " w " + c.w.to_string());
    std::vector<Operand> operands{{random_tensor(c.x, rng)}, {random_tensor(c.w, rng), true}};
    const int64_t group = c.attrs.count("group") != 0 ? std::get<int64_t>(c.attrs.at("group").variant()) : 1;
    if (c.bias) operands.push_back({random_tensor({c.w[1] * group}, rng), false});
    compare("ConvTranspose", c.attrs, operands);
  }
}

TEST(OnednnConvTranspose, LowPrecisionTypes) {
  std::mt19937 rng(72);
  const std::string f16 = provider_for(DType::kFloat16);
  const AttrMap attrs{{"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}, {"output_padding", Ints{1, 1}}};
  for (DType dtype : {DType::kBFloat16, DType::kFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const bool half = dtype == DType::kFloat16;
    compare("ConvTranspose", attrs,
            {{random_tensor({1, 16, 6, 6}, rng, -1.f, 1.f, dtype)},
             {random_tensor({16, 8, 3, 3}, rng, -1.f, 1.f, dtype), true},
             {random_tensor({8}, rng, -1.f, 1.f, dtype), true}},
            CompareOptions{.provider = provider_for(dtype), .tolerance = half ? 2e-3 : 1e-2});
  }
}

TEST(OnednnConvTranspose, WhatOneDnnDoesNotCoverStaysWithTheReference) {
  std::mt19937 rng(73);
  // Weights computed at run time.
  compare("ConvTranspose", {}, {{random_tensor({1, 2, 4, 4}, rng)}, {random_tensor({2, 3, 3, 3}, rng)}},
          false);
  // output_padding beyond the trailing pad: a negative trailing pad to oneDNN.
  compare("ConvTranspose", {{"strides", Ints{2, 2}}, {"output_padding", Ints{1, 1}}},
          {{random_tensor({1, 2, 4, 4}, rng)}, {random_tensor({2, 3, 3, 3}, rng), true}}, false);
}

}  // namespace
}  // namespace kiln::onednn
