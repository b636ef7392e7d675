"""Loads files written by Kiln's HybridBlock::export_model in Apache MXNet 1.9.1 and runs them.

    mxnet_run_export.py PREFIX EPOCH INPUT.npy OUTPUT.npy

The symbol and parameters are imported as a Gluon SymbolBlock (what MXNet users do with exported
models), the block is run in inference mode on the input, and its output is saved for the caller
to compare with Kiln's.
"""
import sys

import mxnet as mx
import numpy as np

prefix, epoch, input_path, output_path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
block = mx.gluon.SymbolBlock.imports(f"{prefix}-symbol.json", ["data"], f"{prefix}-{epoch:04d}.params")
out = block(mx.nd.array(np.load(input_path)))
np.save(output_path, out.asnumpy())
