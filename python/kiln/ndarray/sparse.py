"""mx.nd.sparse, MXNet's row_sparse and csr arrays, which Kiln does not have: importing it works, and
using any name in it raises NotImplementedError saying so. Kiln's arrays are dense."""


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotImplementedError(f"mx.nd.sparse.{name}: Kiln has no sparse storage (row_sparse, csr); "
                              "its arrays are dense")
