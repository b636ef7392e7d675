// Kiln's public C++ API in one include.
#pragma once

#include "kiln/allocator.hpp"
#include "kiln/attrs.hpp"
#include "kiln/autograd.hpp"
#include "kiln/device.hpp"
#include "kiln/dtype.hpp"
#include "kiln/error.hpp"
#include "kiln/half.hpp"
#include "kiln/ndarray.hpp"
#include "kiln/predictor.hpp"
#include "kiln/profiler.hpp"
#include "kiln/shape.hpp"
#include "kiln/storage.hpp"
#include "kiln/symbol.hpp"
#include "kiln/tensor.hpp"
#include "kiln/threading.hpp"
#include "kiln/version.hpp"
