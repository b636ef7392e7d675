"""`import mxnet` as `import kiln`: this module stands for the kiln package, and a finder maps every
mxnet.X to kiln.X, so code written for MXNet 1.x runs on Kiln with nothing else changed."""
import importlib
import importlib.abc
import importlib.util
import sys

import kiln


class _KilnAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        if fullname.startswith("mxnet."):
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return importlib.import_module("kiln" + spec.name[len("mxnet"):])

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _KilnAlias())
sys.modules["mxnet"] = kiln
