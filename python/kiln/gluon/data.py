"""Datasets, samplers and batching (mx.gluon.data), with MXNet 1.9's semantics.

The DataLoader draws index batches from a batch sampler, as MXNet's does: BatchSampler over a
SequentialSampler, a RandomSampler (shuffle; numpy's global generator, so the same seed gives
MXNet's order) or the `sampler` given, or the `batch_sampler` given. An ArrayDataset's batches are
gathered in C++ (kiln/nn/data.hpp: one gather per array per batch); any other dataset (an object
with __len__ and __getitem__) is batched by stacking its samples.
"""
import numpy as np

from .. import _kiln
from .. import ndarray as nd

_data = _kiln.gluon.data


class Dataset:
    """Base class of datasets: __getitem__ and __len__."""

    def __getitem__(self, idx):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def transform_first(self, fn):
        return _TransformFirst(self, fn)


class _TransformFirst(Dataset):
    def __init__(self, dataset, fn):
        self._dataset, self._fn = dataset, fn

    def __len__(self):
        return len(self._dataset)

    def __getitem__(self, idx):
        sample = self._dataset[idx]
        return (self._fn(sample[0]),) + tuple(sample[1:])


def _to_ndarray(array):
    if isinstance(array, nd.NDArray):
        return array
    array = np.asarray(array)
    return nd.array(array, dtype=array.dtype)


class ArrayDataset(Dataset):
    """Samples are rows along axis 0 of each array (NDArrays or numpy arrays, of equal length)."""

    def __init__(self, *args):
        self._arrays = [_to_ndarray(a) for a in args]
        self._impl = _data._ArrayDataset(self._arrays)

    def __len__(self):
        return len(self._impl)

    def __getitem__(self, idx):
        if len(self._arrays) == 1:
            return self._arrays[0][idx]
        return tuple(a[idx] for a in self._arrays)


def default_batchify_fn(samples):
    first = samples[0]
    if isinstance(first, (tuple, list)):
        return [default_batchify_fn(list(field)) for field in zip(*samples)]
    if isinstance(first, nd.NDArray):
        return nd.stack(*samples, axis=0)
    array = np.asarray(samples)
    return nd.array(array, dtype=array.dtype)


class Sampler:
    """Base class of samplers: iterating gives sample indices (or, for a batch sampler, lists)."""

    def __iter__(self):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """start, start + 1, ..., start + length - 1."""

    def __init__(self, length, start=0):
        self._length, self._start = length, start

    def __iter__(self):
        return iter(range(self._start, self._start + self._length))

    def __len__(self):
        return self._length


class RandomSampler(Sampler):
    """0 .. length - 1 in a new random order each epoch (numpy's global generator)."""

    def __init__(self, length):
        self._length = length

    def __iter__(self):
        indices = np.arange(self._length)
        np.random.shuffle(indices)
        return iter(indices)

    def __len__(self):
        return self._length


class FilterSampler(Sampler):
    """The indices of the samples of `dataset` for which fn(sample) is true."""

    def __init__(self, fn, dataset):
        self._indices = [i for i in range(len(dataset)) if fn(dataset[i])]

    def __iter__(self):
        return iter(self._indices)

    def __len__(self):
        return len(self._indices)


_LAST_BATCH = ("keep", "discard", "rollover")


class BatchSampler(Sampler):
    """Lists of batch_size indices from `sampler`. The last, shorter list is kept ('keep'),
    dropped ('discard') or put in front of the next epoch's first batch ('rollover')."""

    def __init__(self, sampler, batch_size, last_batch="keep"):
        if last_batch not in _LAST_BATCH:
            raise ValueError(f"last_batch must be one of 'keep', 'discard', or 'rollover', but got {last_batch}")
        self._sampler, self._batch_size, self._last_batch = sampler, batch_size, last_batch
        self._prev = []

    def __iter__(self):
        batch, self._prev = self._prev, []
        for i in self._sampler:
            batch.append(i)
            if len(batch) == self._batch_size:
                yield batch
                batch = []
        if batch:
            if self._last_batch == "keep":
                yield batch
            elif self._last_batch == "rollover":
                self._prev = batch

    def __len__(self):
        if self._last_batch == "keep":
            return (len(self._sampler) + self._batch_size - 1) // self._batch_size
        if self._last_batch == "discard":
            return len(self._sampler) // self._batch_size
        return (len(self._prev) + len(self._sampler)) // self._batch_size


class DataLoader:
    """Mini-batches of a dataset (MXNet 1.9's DataLoader): give batch_size with shuffle or a
    sampler, and last_batch ('keep', 'discard', 'rollover'), or a batch_sampler alone.
    num_workers is accepted and ignored: batches are made in the calling thread."""

    def __init__(self, dataset, batch_size=None, shuffle=False, sampler=None, last_batch=None,
                 batch_sampler=None, batchify_fn=None, num_workers=0, **kwargs):
        if batch_sampler is None:
            if batch_size is None or batch_size <= 0:
                raise ValueError("DataLoader: batch_size must be a positive integer unless batch_sampler is given")
            if sampler is None:
                sampler = RandomSampler(len(dataset)) if shuffle else SequentialSampler(len(dataset))
            elif shuffle:
                raise ValueError("DataLoader: shuffle must not be specified if sampler is specified")
            batch_sampler = BatchSampler(sampler, batch_size, last_batch or "keep")
        elif batch_size is not None or shuffle or sampler is not None or last_batch is not None:
            raise ValueError("DataLoader: batch_size, shuffle, sampler and last_batch must not be specified if "
                             "batch_sampler is specified")
        self._dataset = dataset
        self._batch_sampler = batch_sampler
        self._batchify_fn = batchify_fn
        self._gather = dataset._impl.gather if isinstance(dataset, ArrayDataset) and batchify_fn is None else None

    def __len__(self):
        return len(self._batch_sampler)

    def __iter__(self):
        batchify = self._batchify_fn or default_batchify_fn
        for indices in self._batch_sampler:
            if self._gather is not None:
                batch = self._gather([int(i) for i in indices])
                yield batch[0] if len(batch) == 1 else batch
            else:
                yield batchify([self._dataset[int(i)] for i in indices])


__all__ = ["Dataset", "ArrayDataset", "DataLoader", "default_batchify_fn", "Sampler", "SequentialSampler",
           "RandomSampler", "FilterSampler", "BatchSampler"]
