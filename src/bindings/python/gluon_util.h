// Conversions the Gluon bindings share: initializers given as names or objects, and grad_req
// strings.
#pragma once

#include <memory>
#include <string>

#include <kiln/nn/gluon.hpp>

#include "bindings.h"

namespace kiln::python {

// None -> null (the block's or initialize()'s default), "zeros" / "ones" / "xavier" / "uniform" /
// "normal", or an mx.init object.
std::shared_ptr<const nn::Initializer> initializer_from_py(const py::object& init);
GradReq grad_req_from_py(const std::string& req);
const char* grad_req_name(GradReq req);

void bind_gluon_blocks(py::module_& g);
void bind_gluon_layers(py::module_& g);

}  // namespace kiln::python
