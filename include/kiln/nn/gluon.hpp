// Everything of Kiln's Gluon API (kiln::nn): parameters, blocks, layers, losses, the Trainer,
// datasets and loaders, with the optimizers, initializers, schedules and metrics they use.
#pragma once

#include "kiln/autograd.hpp"
#include "kiln/nn/activation_layers.hpp"
#include "kiln/nn/basic_layers.hpp"
#include "kiln/nn/block.hpp"
#include "kiln/nn/conv_layers.hpp"
#include "kiln/nn/data.hpp"
#include "kiln/nn/initializer.hpp"
#include "kiln/nn/loss.hpp"
#include "kiln/nn/lr_scheduler.hpp"
#include "kiln/nn/metric.hpp"
#include "kiln/nn/norm_layers.hpp"
#include "kiln/nn/optimizer.hpp"
#include "kiln/nn/parameter.hpp"
#include "kiln/nn/symbol_block.hpp"
#include "kiln/nn/trainer.hpp"
