"""ONNX's and ONNX Runtime's side of the mixed-precision tests (tests/tools/test_mixed_precision.cc).

    mixed_precision_onnxruntime.py check MODEL                 onnx.checker (full check) passes MODEL
    mixed_precision_onnxruntime.py run MODEL INPUT OUTPUT      the checker, then ORT runs MODEL on
                                                              INPUT (.npy) and saves OUTPUT (.npy)
"""
import sys

import numpy as np
import onnx


def check(path):
    onnx.checker.check_model(onnx.load(path), full_check=True)


def run(path, input_path, output_path):
    import onnxruntime as ort

    check(path)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    np.save(output_path, session.run(None, {name: np.load(input_path)})[0])


if __name__ == "__main__":
    if sys.argv[1] == "check":
        check(sys.argv[2])
    else:
        run(*sys.argv[2:5])
