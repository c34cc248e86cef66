"""The replay's command-line tools (files without .py: run, prepare, explain,
gang_quota) loaded as modules, for their unit tests."""

import importlib.machinery
import importlib.util
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def load(name, module_name=None):
    """bench/replay/<name> as a module (its main() not run)."""
    loader = importlib.machinery.SourceFileLoader(module_name or name, os.path.join(HERE, name))
    spec = importlib.util.spec_from_loader(module_name or name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module
