"""The profiler (mx.profiler): set_config(...), set_state('run' | 'stop'), dump() writes the Chrome
trace (chrome://tracing, Perfetto) and dumps() returns the aggregate table."""
from ._kiln import profiler as _p

# MXNet switches that choose what to record; Kiln records every op its engine runs either way.
_MXNET_SCOPE_FLAGS = ("profile_all", "profile_symbolic", "profile_imperative", "profile_api",
                      "profile_process")


def set_config(filename="profile.json", aggregate_stats=False, continuous_dump=False,
               profile_memory=False, **kwargs):
    unknown = [k for k in kwargs if k not in _MXNET_SCOPE_FLAGS]
    if unknown:
        raise TypeError(f"profiler.set_config: unknown options {unknown}")
    _p.set_config(filename, aggregate_stats, continuous_dump, profile_memory)


def set_state(state="stop", profile_process="worker"):
    _p.set_state(state)


def state():
    return _p.state()


def dump(finished=True, profile_process="worker"):
    _p.dump(finished)


def dumps(reset=False):
    return _p.dumps(reset)


def pause(profile_process="worker"):
    _p.pause()


def resume(profile_process="worker"):
    _p.resume()


def mark(name):
    _p.mark(name)


__all__ = ["set_config", "set_state", "state", "dump", "dumps", "pause", "resume", "mark"]
