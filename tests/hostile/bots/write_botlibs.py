"""Attack: plants code in the bot libraries (/botlibs) for the bots that run after it.

numpy imports; then the bot tries to add a module to numpy's package, to change numpy's
``__init__``, to plant a ``sitecustomize``, a ``.pth`` file or a fake package beside numpy,
to delete, rename or chmod a file there and to make a folder: any one of them working
would let it run code in every later bot that imports numpy.
"""

import os
import sys

from cow006 import Agent


def _try(what, action):
    try:
        action()
    except OSError as exc:
        print(f"write_botlibs: {what}: {exc.strerror}", file=sys.stderr, flush=True)
        return
    print(f"ESCAPED: {what} worked", file=sys.stderr, flush=True)


def _append(path):
    def act():
        with open(path, "a") as f:
            f.write("\nimport os  # planted\n")

    return act


class Bot(Agent):
    def on_match_start(self, info):
        print("ATTACK write_botlibs", file=sys.stderr, flush=True)
        import numpy

        pkg = os.path.dirname(numpy.__file__)
        libs = os.path.dirname(pkg)
        print(f"write_botlibs: numpy {numpy.__version__} at {pkg}", file=sys.stderr, flush=True)
        _try("a new module in numpy", _append(os.path.join(pkg, "_planted.py")))
        _try("numpy's __init__ changed", _append(os.path.join(pkg, "__init__.py")))
        _try("a sitecustomize planted", _append(os.path.join(libs, "sitecustomize.py")))
        _try("a .pth file planted", _append(os.path.join(libs, "planted.pth")))
        _try("a fake package", lambda: os.mkdir(os.path.join(libs, "fastapi")))
        _try("numpy's version file deleted", lambda: os.unlink(os.path.join(pkg, "version.py")))
        _try(
            "numpy's version file renamed",
            lambda: os.rename(os.path.join(pkg, "version.py"), os.path.join(pkg, "v.py")),
        )
        _try("numpy's __init__ made writable", lambda: os.chmod(numpy.__file__, 0o777))
        _try("numpy's __init__ touched", lambda: os.utime(numpy.__file__))
        _try("the library folder remounted", lambda: _remount(libs))

    def play(self, view):
        return min(view.hand)


def _remount(path):
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    ms_remount, ms_bind = 32, 4096
    if libc.mount(None, path.encode(), None, ms_remount | ms_bind, None) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
