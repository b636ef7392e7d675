// Conv's window in oneDNN's terms (see conv_geometry.h).
#include "backends/onednn/conv_geometry.h"

#include "backends/onednn/onednn_common.h"
#include "ops/conv_util.h"

namespace kiln::onednn {

std::optional<ConvGeometry> conv_geometry(const Attrs& attrs, const Shape& x, const Shape& y,
                                          const Shape& w) {
  const ops::WindowAttrs window = ops::read_window_attrs(attrs, w);
  ConvGeometry g;
  const int spatial = x.ndim() - 2;
  for (int a = 0; a < spatial; ++a) {
    const size_t i = static_cast<size_t>(a);
    const int64_t extent = (window.kernel[i] - 1) * window.dilations[i] + 1;
    // Leading pads as given, or as SAME_* puts them; the trailing pad is whatever makes the
    // output size come out (so VALID and SAME need no special case).
    const int64_t total = (y[a + 2] - 1) * window.strides[i] + extent - x[a + 2];
    int64_t begin = window.pads[i];
    if (window.auto_pad == ops::AutoPad::kSameUpper || window.auto_pad == ops::AutoPad::kSameLower) {
      begin = ops::same_pad_begin(window.auto_pad, total);
    } else if (window.auto_pad == ops::AutoPad::kValid) {
      begin = 0;
    }
    // A negative trailing pad (a window that does not fit at the end is dropped, as VALID and
    // floor rounding do) is oneDNN's to accept or refuse.
    if (begin < 0) return std::nullopt;
    g.strides.push_back(window.strides[i]);
    g.dilations.push_back(window.dilations[i] - 1);  // oneDNN counts the gaps
    g.pad_begin.push_back(begin);
    g.pad_end.push_back(total - begin);
  }
  g.weight_dims = to_dims(w);
  if (window.group > 1) {
    g.weight_dims[0] /= window.group;
    g.weight_dims.insert(g.weight_dims.begin(), window.group);
  }
  // 2 multiply-adds' worth per output element and weight tap of its group.
  g.flops = 2.0 * static_cast<double>(y.numel()) * static_cast<double>(w.numel() / w[0]);
  return g;
}

}  // namespace kiln::onednn
