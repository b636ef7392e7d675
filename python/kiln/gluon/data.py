"""Datasets and batching (mx.gluon.data).

ArrayDataset + DataLoader batch in C++ (kiln/nn/data.hpp: shuffled index batches, one gather per
array per batch); any other dataset (an object with __len__ and __getitem__) is batched here by
stacking its samples.
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


class DataLoader:
    """Mini-batches of a dataset, optionally shuffled (the order follows numpy's global seed, as in
    MXNet); last_batch is 'keep', 'discard' or 'rollover'."""

    def __init__(self, dataset, batch_size=None, shuffle=False, sampler=None, last_batch=None,
                 batch_sampler=None, batchify_fn=None, num_workers=0, **kwargs):
        if batch_size is None or batch_size <= 0:
            raise ValueError("DataLoader: batch_size must be a positive integer")
        if sampler is not None or batch_sampler is not None:
            raise NotImplementedError("DataLoader: samplers are not supported; use shuffle and last_batch")
        self._dataset = dataset
        self._batch_size = batch_size
        self._shuffle = shuffle
        self._last_batch = last_batch or "keep"
        self._batchify_fn = batchify_fn
        self._impl = None
        if isinstance(dataset, ArrayDataset) and batchify_fn is None:
            self._impl = _data._DataLoader(dataset._impl, batch_size, shuffle, int(np.random.randint(2 ** 31)),
                                           self._last_batch)

    def __len__(self):
        if self._impl is not None:
            return len(self._impl)
        n = len(self._dataset)
        return n // self._batch_size if self._last_batch == "discard" else -(-n // self._batch_size)

    def __iter__(self):
        if self._impl is not None:
            gather = self._dataset._impl.gather
            for indices in self._impl.next_epoch():
                batch = gather(indices)
                yield batch[0] if len(batch) == 1 else batch
            return
        order = np.random.permutation(len(self._dataset)) if self._shuffle else np.arange(len(self._dataset))
        batchify = self._batchify_fn or default_batchify_fn
        for start in range(0, len(order), self._batch_size):
            indices = order[start:start + self._batch_size]
            if len(indices) < self._batch_size and self._last_batch == "discard":
                return
            yield batchify([self._dataset[int(i)] for i in indices])


__all__ = ["Dataset", "ArrayDataset", "DataLoader", "default_batchify_fn"]
