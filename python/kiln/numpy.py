"""mx.numpy, MXNet's NumPy-compatible array interface, which Kiln does not have (yet): importing it
works, so that code which imports it for some functions keeps the rest, and using any name in it
raises NotImplementedError saying so. Kiln's arrays are mx.nd's NDArrays."""


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotImplementedError(f"mx.numpy.{name}: Kiln has no mxnet.numpy interface; use mx.nd (NDArray)")
