// Gluon's layers and losses for Python (mx.gluon.nn, mx.gluon.loss), with the keyword arguments
// of MXNet 1.x. Window sizes take an int or a tuple, as in Gluon.
#include <pybind11/stl.h>

#include <kiln/nn/gluon.hpp>

#include "bindings.h"
#include "gluon_util.h"

namespace kiln::python {

namespace {

std::vector<int64_t> ints(const py::object& v) {
  if (v.is_none()) return {};
  if (py::isinstance<py::int_>(v)) return {v.cast<int64_t>()};
  return v.cast<std::vector<int64_t>>();
}

std::string prefix_of(const py::object& prefix) {
  return prefix.is_none() ? "" : prefix.cast<std::string>();
}

std::string activation_of(const py::object& activation) {
  return activation.is_none() ? "" : activation.cast<std::string>();
}

template <class Conv>
void bind_conv(py::module_& g, const char* name) {
  py::classh<Conv, nn::HybridBlock>(g, name).def(
      py::init([](int64_t channels, const py::object& kernel_size, const py::object& strides,
                  const py::object& padding, const py::object& dilation, int64_t groups, const std::string&,
                  const py::object& activation, bool use_bias, const py::object& weight_initializer,
                  const py::object& bias_initializer, int64_t in_channels, const py::object& output_padding,
                  const py::object& prefix, const py::object&) {
        nn::ConvOptions o;
        o.strides = ints(strides);
        o.padding = ints(padding);
        o.dilation = ints(dilation);
        if (!output_padding.is_none()) o.output_padding = ints(output_padding);
        o.groups = groups;
        o.activation = activation_of(activation);
        o.use_bias = use_bias;
        o.weight_initializer = initializer_from_py(weight_initializer);
        if (!bias_initializer.is_none()) o.bias_initializer = initializer_from_py(bias_initializer);
        o.in_channels = in_channels;
        o.prefix = prefix_of(prefix);
        return std::make_shared<Conv>(channels, ints(kernel_size), std::move(o));
      }),
      py::arg("channels"), py::arg("kernel_size"), py::arg("strides") = 1, py::arg("padding") = 0,
      py::arg("dilation") = 1, py::arg("groups") = 1, py::arg("layout") = "",
      py::arg("activation") = py::none(), py::arg("use_bias") = true,
      py::arg("weight_initializer") = py::none(), py::arg("bias_initializer") = "zeros",
      py::arg("in_channels") = 0, py::arg("output_padding") = py::none(), py::arg("prefix") = py::none(),
      py::arg("params") = py::none());
}

template <class Pool>
void bind_pool(py::module_& g, const char* name, bool average) {
  py::classh<Pool, nn::HybridBlock>(g, name).def(
      py::init([average](const py::object& pool_size, const py::object& strides, const py::object& padding,
                         const std::string&, bool ceil_mode, bool count_include_pad, const py::object& prefix,
                         const py::object&) {
        nn::PoolOptions o;
        o.pool_size = ints(pool_size);
        o.strides = ints(strides);
        o.padding = ints(padding);
        o.ceil_mode = ceil_mode;
        o.count_include_pad = average ? count_include_pad : true;
        o.prefix = prefix_of(prefix);
        return std::make_shared<Pool>(std::move(o));
      }),
      py::arg("pool_size") = 2, py::arg("strides") = py::none(), py::arg("padding") = 0,
      py::arg("layout") = "", py::arg("ceil_mode") = false, py::arg("count_include_pad") = true,
      py::arg("prefix") = py::none(), py::arg("params") = py::none());
}

template <class Pool>
void bind_global_pool(py::module_& g, const char* name) {
  py::classh<Pool, nn::HybridBlock>(g, name).def(
      py::init([](const std::string&, const py::object& prefix, const py::object&) {
        return std::make_shared<Pool>(prefix_of(prefix));
      }),
      py::arg("layout") = "", py::arg("prefix") = py::none(), py::arg("params") = py::none());
}

nn::NormOptions norm_options(double epsilon, bool center, bool scale, const py::object& beta_initializer,
                             const py::object& gamma_initializer, int64_t in_channels,
                             const py::object& prefix) {
  nn::NormOptions o;
  o.epsilon = epsilon;
  o.center = center;
  o.scale = scale;
  if (!beta_initializer.is_none()) o.beta_initializer = initializer_from_py(beta_initializer);
  if (!gamma_initializer.is_none()) o.gamma_initializer = initializer_from_py(gamma_initializer);
  o.in_channels = in_channels;
  o.prefix = prefix_of(prefix);
  return o;
}

nn::LossOptions loss_options(const py::object& weight, int batch_axis, const py::object& prefix) {
  nn::LossOptions o;
  o.weight = weight.is_none() ? 1.0 : weight.cast<double>();
  o.batch_axis = batch_axis;
  o.prefix = prefix_of(prefix);
  return o;
}

}  // namespace

void bind_gluon_layers(py::module_& g) {
  py::module_ nn_m = g.def_submodule("nn", "Gluon layers");
  py::classh<nn::Dense, nn::HybridBlock>(nn_m, "Dense")
      .def(py::init([](int64_t units, const py::object& activation, bool use_bias, bool flatten,
                       const py::object& dtype, const py::object& weight_initializer,
                       const py::object& bias_initializer, int64_t in_units, const py::object& prefix,
                       const py::object&) {
             nn::DenseOptions o;
             o.activation = activation_of(activation);
             o.use_bias = use_bias;
             o.flatten = flatten;
             o.dtype = dtype_from_py(dtype);
             o.weight_initializer = initializer_from_py(weight_initializer);
             if (!bias_initializer.is_none()) o.bias_initializer = initializer_from_py(bias_initializer);
             o.in_units = in_units;
             o.prefix = prefix_of(prefix);
             return std::make_shared<nn::Dense>(units, std::move(o));
           }),
           py::arg("units"), py::arg("activation") = py::none(), py::arg("use_bias") = true,
           py::arg("flatten") = true, py::arg("dtype") = "float32",
           py::arg("weight_initializer") = py::none(), py::arg("bias_initializer") = "zeros",
           py::arg("in_units") = 0, py::arg("prefix") = py::none(), py::arg("params") = py::none());
  py::classh<nn::Dropout, nn::HybridBlock>(nn_m, "Dropout")
      .def(py::init([](double rate, const py::object&, const py::object& prefix, const py::object&) {
             return std::make_shared<nn::Dropout>(rate, prefix_of(prefix));
           }),
           py::arg("rate"), py::arg("axes") = py::none(), py::arg("prefix") = py::none(),
           py::arg("params") = py::none());
  py::classh<nn::Embedding, nn::HybridBlock>(nn_m, "Embedding")
      .def(py::init([](int64_t input_dim, int64_t output_dim, const py::object& dtype,
                       const py::object& weight_initializer, const py::object& prefix, const py::object&) {
             nn::EmbeddingOptions o;
             o.dtype = dtype_from_py(dtype);
             o.weight_initializer = initializer_from_py(weight_initializer);
             o.prefix = prefix_of(prefix);
             return std::make_shared<nn::Embedding>(input_dim, output_dim, std::move(o));
           }),
           py::arg("input_dim"), py::arg("output_dim"), py::arg("dtype") = "float32",
           py::arg("weight_initializer") = py::none(), py::arg("prefix") = py::none(),
           py::arg("params") = py::none());
  py::classh<nn::Flatten, nn::HybridBlock>(nn_m, "Flatten")
      .def(py::init([](const py::object& prefix, const py::object&) {
             return std::make_shared<nn::Flatten>(prefix_of(prefix));
           }),
           py::arg("prefix") = py::none(), py::arg("params") = py::none());

  py::classh<nn::Activation, nn::HybridBlock>(nn_m, "Activation")
      .def(py::init([](const std::string& activation, const py::object& prefix, const py::object&) {
             return std::make_shared<nn::Activation>(activation, prefix_of(prefix));
           }),
           py::arg("activation"), py::arg("prefix") = py::none(), py::arg("params") = py::none());
  py::classh<nn::LeakyReLU, nn::HybridBlock>(nn_m, "LeakyReLU")
      .def(py::init([](double alpha, const py::object& prefix, const py::object&) {
             return std::make_shared<nn::LeakyReLU>(alpha, prefix_of(prefix));
           }),
           py::arg("alpha"), py::arg("prefix") = py::none(), py::arg("params") = py::none());
  py::classh<nn::PReLU, nn::HybridBlock>(nn_m, "PReLU")
      .def(py::init([](const py::object& alpha_initializer, int64_t in_channels, const py::object& prefix,
                       const py::object&) {
             nn::PReLUOptions o;
             if (!alpha_initializer.is_none()) o.alpha_initializer = initializer_from_py(alpha_initializer);
             o.in_channels = in_channels;
             o.prefix = prefix_of(prefix);
             return std::make_shared<nn::PReLU>(std::move(o));
           }),
           py::arg("alpha_initializer") = py::none(), py::arg("in_channels") = 1,
           py::arg("prefix") = py::none(), py::arg("params") = py::none());
  py::classh<nn::ELU, nn::HybridBlock>(nn_m, "ELU")
      .def(py::init([](double alpha, const py::object& prefix, const py::object&) {
             return std::make_shared<nn::ELU>(alpha, prefix_of(prefix));
           }),
           py::arg("alpha") = 1.0, py::arg("prefix") = py::none(), py::arg("params") = py::none());
  py::classh<nn::SELU, nn::HybridBlock>(nn_m, "SELU")
      .def(py::init([](const py::object& prefix, const py::object&) {
             return std::make_shared<nn::SELU>(prefix_of(prefix));
           }),
           py::arg("prefix") = py::none(), py::arg("params") = py::none());
  py::classh<nn::Swish, nn::HybridBlock>(nn_m, "Swish")
      .def(py::init([](double beta, const py::object& prefix, const py::object&) {
             return std::make_shared<nn::Swish>(beta, prefix_of(prefix));
           }),
           py::arg("beta") = 1.0, py::arg("prefix") = py::none(), py::arg("params") = py::none());
  py::classh<nn::SiLU, nn::Swish>(nn_m, "SiLU")
      .def(py::init([](const py::object& prefix, const py::object&) {
             return std::make_shared<nn::SiLU>(prefix_of(prefix));
           }),
           py::arg("prefix") = py::none(), py::arg("params") = py::none());
  py::classh<nn::GELU, nn::HybridBlock>(nn_m, "GELU")
      .def(py::init([](const py::object& prefix, const py::object&) {
             return std::make_shared<nn::GELU>(prefix_of(prefix));
           }),
           py::arg("prefix") = py::none(), py::arg("params") = py::none());

  bind_conv<nn::Conv1D>(nn_m, "Conv1D");
  bind_conv<nn::Conv2D>(nn_m, "Conv2D");
  bind_conv<nn::Conv3D>(nn_m, "Conv3D");
  bind_conv<nn::Conv2DTranspose>(nn_m, "Conv2DTranspose");
  bind_pool<nn::MaxPool1D>(nn_m, "MaxPool1D", false);
  bind_pool<nn::MaxPool2D>(nn_m, "MaxPool2D", false);
  bind_pool<nn::MaxPool3D>(nn_m, "MaxPool3D", false);
  bind_pool<nn::AvgPool1D>(nn_m, "AvgPool1D", true);
  bind_pool<nn::AvgPool2D>(nn_m, "AvgPool2D", true);
  bind_pool<nn::AvgPool3D>(nn_m, "AvgPool3D", true);
  bind_global_pool<nn::GlobalAvgPool1D>(nn_m, "GlobalAvgPool1D");
  bind_global_pool<nn::GlobalAvgPool2D>(nn_m, "GlobalAvgPool2D");
  bind_global_pool<nn::GlobalAvgPool3D>(nn_m, "GlobalAvgPool3D");
  bind_global_pool<nn::GlobalMaxPool1D>(nn_m, "GlobalMaxPool1D");
  bind_global_pool<nn::GlobalMaxPool2D>(nn_m, "GlobalMaxPool2D");
  bind_global_pool<nn::GlobalMaxPool3D>(nn_m, "GlobalMaxPool3D");

  py::classh<nn::BatchNorm, nn::HybridBlock>(nn_m, "BatchNorm")
      .def(py::init([](int axis, double momentum, double epsilon, bool center, bool scale,
                       bool use_global_stats, const py::object& beta_initializer,
                       const py::object& gamma_initializer, const py::object& running_mean_initializer,
                       const py::object& running_variance_initializer, int64_t in_channels,
                       const py::object& prefix, const py::object&) {
             nn::BatchNormOptions o;
             o.axis = axis;
             o.momentum = momentum;
             o.epsilon = epsilon;
             o.center = center;
             o.scale = scale;
             o.use_global_stats = use_global_stats;
             if (!beta_initializer.is_none()) o.beta_initializer = initializer_from_py(beta_initializer);
             if (!gamma_initializer.is_none()) o.gamma_initializer = initializer_from_py(gamma_initializer);
             if (!running_mean_initializer.is_none())
               o.running_mean_initializer = initializer_from_py(running_mean_initializer);
             if (!running_variance_initializer.is_none())
               o.running_variance_initializer = initializer_from_py(running_variance_initializer);
             o.in_channels = in_channels;
             o.prefix = prefix_of(prefix);
             return std::make_shared<nn::BatchNorm>(std::move(o));
           }),
           py::arg("axis") = 1, py::arg("momentum") = 0.9, py::arg("epsilon") = 1e-5,
           py::arg("center") = true, py::arg("scale") = true, py::arg("use_global_stats") = false,
           py::arg("beta_initializer") = "zeros", py::arg("gamma_initializer") = "ones",
           py::arg("running_mean_initializer") = "zeros", py::arg("running_variance_initializer") = "ones",
           py::arg("in_channels") = 0, py::arg("prefix") = py::none(), py::arg("params") = py::none());
  py::classh<nn::LayerNorm, nn::HybridBlock>(nn_m, "LayerNorm")
      .def(py::init([](int axis, double epsilon, bool center, bool scale, const py::object& beta_initializer,
                       const py::object& gamma_initializer, int64_t in_channels, const py::object& prefix,
                       const py::object&) {
             return std::make_shared<nn::LayerNorm>(norm_options(epsilon, center, scale, beta_initializer,
                                                                 gamma_initializer, in_channels, prefix),
                                                    axis);
           }),
           py::arg("axis") = -1, py::arg("epsilon") = 1e-5, py::arg("center") = true, py::arg("scale") = true,
           py::arg("beta_initializer") = "zeros", py::arg("gamma_initializer") = "ones",
           py::arg("in_channels") = 0, py::arg("prefix") = py::none(), py::arg("params") = py::none());
  py::classh<nn::InstanceNorm, nn::HybridBlock>(nn_m, "InstanceNorm")
      .def(py::init([](int, double epsilon, bool center, bool scale, const py::object& beta_initializer,
                       const py::object& gamma_initializer, int64_t in_channels, const py::object& prefix,
                       const py::object&) {
             return std::make_shared<nn::InstanceNorm>(norm_options(epsilon, center, scale, beta_initializer,
                                                                    gamma_initializer, in_channels, prefix));
           }),
           py::arg("axis") = 1, py::arg("epsilon") = 1e-5, py::arg("center") = true, py::arg("scale") = false,
           py::arg("beta_initializer") = "zeros", py::arg("gamma_initializer") = "ones",
           py::arg("in_channels") = 0, py::arg("prefix") = py::none(), py::arg("params") = py::none());
  py::classh<nn::GroupNorm, nn::HybridBlock>(nn_m, "GroupNorm")
      .def(py::init([](int64_t num_groups, double epsilon, bool center, bool scale,
                       const py::object& beta_initializer, const py::object& gamma_initializer,
                       const py::object& prefix, const py::object&) {
             return std::make_shared<nn::GroupNorm>(
                 num_groups,
                 norm_options(epsilon, center, scale, beta_initializer, gamma_initializer, 0, prefix));
           }),
           py::arg("num_groups") = 1, py::arg("epsilon") = 1e-5, py::arg("center") = true,
           py::arg("scale") = true, py::arg("beta_initializer") = "zeros",
           py::arg("gamma_initializer") = "ones", py::arg("prefix") = py::none(),
           py::arg("params") = py::none());

  py::module_ loss_m = g.def_submodule("loss", "Gluon losses");
  py::classh<nn::Loss, nn::HybridBlock>(loss_m, "Loss")
      .def(
          "__call__",
          [](nn::Loss& loss, const NDArray& pred, const NDArray& label,
             const std::optional<NDArray>& sample_weight) {
            py::gil_scoped_release release;
            return loss(pred, label, sample_weight ? *sample_weight : NDArray());
          },
          py::arg("pred"), py::arg("label"), py::arg("sample_weight") = py::none());
  py::classh<nn::L1Loss, nn::Loss>(loss_m, "L1Loss")
      .def(py::init([](const py::object& weight, int batch_axis, const py::object& prefix) {
             return std::make_shared<nn::L1Loss>(loss_options(weight, batch_axis, prefix));
           }),
           py::arg("weight") = py::none(), py::arg("batch_axis") = 0, py::arg("prefix") = py::none());
  py::classh<nn::L2Loss, nn::Loss>(loss_m, "L2Loss")
      .def(py::init([](const py::object& weight, int batch_axis, const py::object& prefix) {
             return std::make_shared<nn::L2Loss>(loss_options(weight, batch_axis, prefix));
           }),
           py::arg("weight") = 1.0, py::arg("batch_axis") = 0, py::arg("prefix") = py::none());
  py::classh<nn::HuberLoss, nn::Loss>(loss_m, "HuberLoss")
      .def(py::init([](double rho, const py::object& weight, int batch_axis, const py::object& prefix) {
             return std::make_shared<nn::HuberLoss>(rho, loss_options(weight, batch_axis, prefix));
           }),
           py::arg("rho") = 1.0, py::arg("weight") = py::none(), py::arg("batch_axis") = 0,
           py::arg("prefix") = py::none());
  py::classh<nn::SoftmaxCrossEntropyLoss, nn::Loss>(loss_m, "SoftmaxCrossEntropyLoss")
      .def(py::init([](int axis, bool sparse_label, bool from_logits, const py::object& weight,
                       int batch_axis, const py::object& prefix) {
             nn::SoftmaxCrossEntropyOptions o;
             static_cast<nn::LossOptions&>(o) = loss_options(weight, batch_axis, prefix);
             o.axis = axis;
             o.sparse_label = sparse_label;
             o.from_logits = from_logits;
             return std::make_shared<nn::SoftmaxCrossEntropyLoss>(std::move(o));
           }),
           py::arg("axis") = -1, py::arg("sparse_label") = true, py::arg("from_logits") = false,
           py::arg("weight") = py::none(), py::arg("batch_axis") = 0, py::arg("prefix") = py::none());
  loss_m.attr("SoftmaxCELoss") = loss_m.attr("SoftmaxCrossEntropyLoss");
  py::classh<nn::SigmoidBinaryCrossEntropyLoss, nn::Loss>(loss_m, "SigmoidBinaryCrossEntropyLoss")
      .def(
          py::init([](bool from_sigmoid, const py::object& weight, int batch_axis, const py::object& prefix) {
            nn::SigmoidBinaryCrossEntropyOptions o;
            static_cast<nn::LossOptions&>(o) = loss_options(weight, batch_axis, prefix);
            o.from_sigmoid = from_sigmoid;
            return std::make_shared<nn::SigmoidBinaryCrossEntropyLoss>(std::move(o));
          }),
          py::arg("from_sigmoid") = false, py::arg("weight") = py::none(), py::arg("batch_axis") = 0,
          py::arg("prefix") = py::none());
  loss_m.attr("SigmoidBCELoss") = loss_m.attr("SigmoidBinaryCrossEntropyLoss");
  py::classh<nn::KLDivLoss, nn::Loss>(loss_m, "KLDivLoss")
      .def(py::init([](bool from_logits, int axis, const py::object& weight, int batch_axis,
                       const py::object& prefix) {
             nn::KLDivOptions o;
             static_cast<nn::LossOptions&>(o) = loss_options(weight, batch_axis, prefix);
             o.from_logits = from_logits;
             o.axis = axis;
             return std::make_shared<nn::KLDivLoss>(std::move(o));
           }),
           py::arg("from_logits") = true, py::arg("axis") = -1, py::arg("weight") = py::none(),
           py::arg("batch_axis") = 0, py::arg("prefix") = py::none());
}

}  // namespace kiln::python
