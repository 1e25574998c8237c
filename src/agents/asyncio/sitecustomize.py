# sonde-asyncio-hook: sonde's start-up hook for Python programs.
#
# sonde puts the directory holding this file first on PYTHONPATH for the
# command it profiles, so every Python that command starts imports this file
# as its `sitecustomize` module.  On CPython 3.8 and later, when
# SONDE_ASYNCIO_DIR is set, it installs the asyncio recorder that lives next
# to it (_sonde_asyncio.py).  On every version it then runs the sitecustomize
# module that Python would have imported without sonde (Debian's, a
# virtualenv's, the user's own), as the module `sitecustomize`.
#
# This file must stay valid and harmless on Python 2.7 and 3.6+: no
# f-strings, no newer syntax.  It prints nothing, writes no file and leaves
# sys.path as it found it.

import os
import sys

# The first line of this file; a sitecustomize that starts with it is another
# copy of this hook (a second sonde's directory further on PYTHONPATH).
# Running that copy would search again and could come back here, so its
# directory is skipped like this file's own.
_SONDE_MARK = b"# sonde-asyncio-hook:"


def _sonde_install():
    if sys.version_info < (3, 8):
        return
    if not os.environ.get("SONDE_ASYNCIO_DIR"):
        return
    try:
        import _sonde_asyncio
        _sonde_asyncio.install()
    except Exception:
        pass


def _sonde_search_path(skip):
    """sys.path without the entries that name a directory in skip."""
    skip_real = set()
    for d in skip:
        skip_real.add(d)
        try:
            skip_real.add(os.path.realpath(d))
        except Exception:
            pass
    kept = []
    for entry in sys.path:
        try:
            where = os.path.abspath(entry or os.curdir)
            if where in skip_real or os.path.realpath(where) in skip_real:
                continue
        except Exception:
            pass
        kept.append(entry)
    return kept


def _sonde_is_copy_of_us(filename):
    if not filename:
        return False
    try:
        handle = open(filename, "rb")
        try:
            head = handle.read(len(_SONDE_MARK))
        finally:
            handle.close()
    except Exception:
        return False
    return head == _SONDE_MARK


def _sonde_find(path):
    """(what to load, its file name) of the first sitecustomize on path, or
    None."""
    if sys.version_info >= (3, 4):
        finder = getattr(sys.modules.get("_frozen_importlib_external"),
                         "PathFinder", None)
        if finder is None:
            from importlib.machinery import PathFinder as finder
        spec = finder.find_spec("sitecustomize", path)
        if spec is None or spec.loader is None:
            return None
        return spec, spec.origin
    import imp
    try:
        found = imp.find_module("sitecustomize", path)
    except ImportError:
        return None
    if found[0] is not None:
        found[0].close()
    return found, found[1]


def _sonde_load(what):
    """Runs the found sitecustomize as the module `sitecustomize`.  Like the
    import system, the module is in sys.modules while its code runs, and
    whatever is there afterwards is what site.py's `import sitecustomize`
    gives.  An exception propagates to site.py, which reports it as it does
    one from a sitecustomize it imported itself (and the import system drops
    the half-made module from sys.modules)."""
    if sys.version_info >= (3, 4):
        module_from_spec = getattr(sys.modules.get("_frozen_importlib"),
                                   "module_from_spec", None)
        if module_from_spec is None:
            from importlib.util import module_from_spec
        module = module_from_spec(what)
        sys.modules["sitecustomize"] = module
        what.loader.exec_module(module)
        return
    import imp
    pathname, description = what[1], what[2]
    handle = None
    if description[2] == imp.PY_SOURCE:
        handle = open(pathname, "U")
    elif description[2] in (imp.PY_COMPILED, imp.C_EXTENSION):
        handle = open(pathname, "rb")
    try:
        imp.load_module("sitecustomize", handle, pathname, description)
    finally:
        if handle is not None:
            handle.close()


def _sonde_chain():
    skip = []
    try:
        skip.append(os.path.dirname(os.path.abspath(__file__)))
    except Exception:
        pass
    for _ in range(8):
        found = _sonde_find(_sonde_search_path(skip))
        if found is None:
            return
        if not _sonde_is_copy_of_us(found[1]):
            _sonde_load(found[0])
            return
        skip.append(os.path.dirname(os.path.abspath(found[1])))


def _sonde_install_functions():
    """sonde's --function agent (_sonde_function.py), when
    SONDE_FUNCTION_DIR is set: it wraps the functions named when their
    module is imported."""
    if sys.version_info < (3, 8):
        return
    if not os.environ.get("SONDE_FUNCTION_DIR"):
        return
    try:
        import _sonde_function
        _sonde_function.install()
    except Exception:
        pass


_sonde_install()
_sonde_install_functions()
_sonde_chain()
