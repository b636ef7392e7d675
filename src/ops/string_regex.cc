// RegexFullMatch: whether each string of a string tensor matches a pattern from start to end,
// with the standard library's ECMAScript regular expressions (ONNX names RE2's syntax; the two
// agree on the common core: classes, groups, alternation, repetition, anchors). A file of its own
// because GCC 12 warns of a maybe-uninitialized std::function inside <regex> when sanitizers are
// on; src/CMakeLists.txt silences that warning for this file only.
#include <regex>

#include "infer_util.h"

namespace kiln::ops {
namespace {

KILN_REGISTER_OP(RegexFullMatch)
    .doc("Whether each string matches `pattern` (an ECMAScript regular expression) from start to end.")
    .input("X")
    .output("Y")
    .takes_strings()
    .required_attr("pattern", AttrType::kString,
                   [](const AttrValue& v, const std::string& what) {
                     try {
                       std::regex(std::get<std::string>(v.variant()));
                     } catch (const std::regex_error& e) {
                       raise(ErrorCode::kInvalidArgument, what, ": not a regular expression: ", e.what());
                     }
                   })
    .infer([](InferContext& ctx) {
      KILN_CHECK(is_string(ctx.dtype(0)), ErrorCode::kTypeMismatch, ctx.input_label(0),
                 ": expected a string tensor, got ", dtype_name(ctx.dtype(0)));
      return std::vector<TensorInfo>{{DType::kBool, ctx.shape(0)}};
    })
    .kernel([](KernelContext& ctx) {
      const std::regex pattern(ctx.attrs.get_string("pattern"));
      const std::string* x = ctx.input(0).data<std::string>();
      bool* y = ctx.output(0).data<bool>();
      for (int64_t i = 0; i < ctx.input(0).numel(); ++i) y[i] = std::regex_match(x[i], pattern);
    });

}  // namespace
}  // namespace kiln::ops
