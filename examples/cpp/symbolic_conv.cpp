// The MXNet-style symbolic API: compose a small convolutional block, bind it to an input shape,
// run it, and print what it produced.
//
//   entrada -> Convolution(3x3, 32 filters) -> Activation(relu) -> Pooling(max, 2x2, stride 2)
#include <iostream>

#include "kiln/ndarray.hpp"
#include "kiln/symbol.hpp"

int main() {
  using namespace kiln;
  const Symbol data = Symbol::Variable("entrada");
  const Symbol conv = sym::Convolution(data, {.kernel = {3, 3}, .num_filter = 32}, "conv0");
  const Symbol relu = sym::Activation(conv, "relu", "relu0");
  const Symbol pool = sym::Pooling(relu, {.pool_type = "max", .kernel = {2, 2}, .stride = {2, 2}}, "pool0");

  std::cout << "arguments:";
  for (const std::string& name : pool.list_arguments()) std::cout << " " << name;
  std::cout << "\n";

  // simple_bind deduces conv0_weight (32, 1, 3, 3) and conv0_bias (32) from the data shape.
  Executor exe = pool.simple_bind(cpu(), {{"entrada", Shape{1, 1, 28, 28}}});
  exe.arg_dict()["entrada"] = nd::ones(Shape{1, 1, 28, 28});
  exe.arg_dict()["conv0_weight"] = nd::full(Shape{32, 1, 3, 3}, 0.1);
  exe.forward(false);
  const NDArray& out = exe.outputs()[0];
  std::cout << "output shape: " << out.shape() << ", first value " << out.to_vector<float>()[0] << "\n";
  return 0;
}
