"""Devices (MXNet's mx.context): cpu(), gpu(i), num_gpus() and the default context."""
from ._kiln import Context, cpu, gpu, num_gpus


def current_context():
    """The default device of new arrays: the CPU (Kiln runs on the CPU for now)."""
    return cpu()


__all__ = ["Context", "cpu", "gpu", "num_gpus", "current_context"]
