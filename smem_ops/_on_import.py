"""Run a callback right after a module is first imported, without importing it: for what smem_ops
registers with parts of torch that cost seconds to import (torch.distributed.tensor, torch._dynamo)
and that a user who never touches them should not pay for."""

from __future__ import annotations

import importlib.abc
import sys
import warnings
from collections.abc import Callable


def call_after_import(name: str, callback: Callable[[], None], what: str) -> None:
    """Call `callback` now if module `name` is imported, else right after its first import. A
    failing callback warns (`smem_ops: {what} not registered`) and never breaks that import."""
    if name in sys.modules:
        callback()
    else:
        sys.meta_path.insert(0, _Finder(name, callback, what))


class _Finder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: on the first lookup of its module it leaves sys.meta_path and wraps
    the loader the other finders return."""

    def __init__(self, name, callback, what):
        self._name, self._callback, self._what = name, callback, what

    def find_spec(self, fullname, path, target=None):
        if fullname != self._name:
            return None
        sys.meta_path.remove(self)
        for finder in sys.meta_path:
            spec = getattr(finder, "find_spec", lambda *a: None)(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _ThenCall(spec.loader, self._callback, self._what)
                return spec
        return None


class _ThenCall(importlib.abc.Loader):
    def __init__(self, inner, callback, what):
        self._inner, self._callback, self._what = inner, callback, what

    def create_module(self, spec):
        return self._inner.create_module(spec)

    def exec_module(self, module):
        self._inner.exec_module(module)
        try:
            self._callback()
        except Exception as e:  # noqa: BLE001
            warnings.warn(f"smem_ops: {self._what} not registered: {e!r}", stacklevel=2)

    def __getattr__(self, name):  # get_source, get_filename, is_package, ...
        return getattr(self._inner, name)
