"""Attack: imports packages outside the documented bot libraries (numpy).

The host's virtualenv holds the platform's packages (FastAPI, SQLAlchemy, Celery, pydantic,
gymnasium, ...) and ours: the bot tries them as they are, then again after putting every
site-packages folder it can guess on sys.path (the interpreter's own, the virtualenvs of
the host's checkout named in its settings, the site module's answer).  Any one importing is
an escape: only the standard library, cow006 and /botlibs are the bot's.
"""

import glob
import os
import sys

from cow006 import Agent

UNLISTED = (
    "fastapi",
    "sqlalchemy",
    "celery",
    "pydantic",
    "gymnasium",
    "typer",
    "rich",
    "pyseccomp",
    "redis",
    "cow006_platform",
    "cow006_workers",
)


def _attempt(round_):
    for name in UNLISTED:
        try:
            module = __import__(name)
        except ImportError as exc:
            print(f"import_unlisted: {round_}: {name}: {exc}", file=sys.stderr, flush=True)
            continue
        where = getattr(module, "__file__", "?")
        print(f"ESCAPED: imported {name} from {where}", file=sys.stderr, flush=True)


class Bot(Agent):
    def on_match_start(self, info):
        print("ATTACK import_unlisted", file=sys.stderr, flush=True)
        _attempt("as is")
        guesses = []
        source = info.settings.get("host_source", "")
        if source:  # the host's checkout: its .venv, and any venv beside it
            top = os.path.dirname(os.path.dirname(os.path.dirname(source)))
            guesses += glob.glob(os.path.join(top, ".venv", "lib", "python3*", "site-packages"))
            guesses += glob.glob(
                os.path.join(top, "*", ".venv", "lib", "python3*", "site-packages")
            )
        prefix = sys.base_prefix
        guesses += glob.glob(os.path.join(prefix, "lib", "python3*", "site-packages"))
        guesses += glob.glob("/usr/lib/python3*/site-packages") + glob.glob(
            "/usr/lib/python3/dist-packages"
        )
        guesses += glob.glob("/usr/local/lib/python3*/site-packages")
        try:
            import site

            guesses += site.getsitepackages()
        except Exception as exc:
            print(f"import_unlisted: site: {exc}", file=sys.stderr, flush=True)
        for folder in guesses:
            seen = sorted(os.listdir(folder))[:5] if os.path.isdir(folder) else "absent"
            print(
                f"import_unlisted: {folder}: {seen}",
                file=sys.stderr,
                flush=True,
            )
        sys.path += guesses
        sys.path_importer_cache.clear()
        _attempt("with the guesses")
        for name in list(sys.modules):
            if name.split(".")[0] in UNLISTED:
                print(f"ESCAPED: {name} is loaded", file=sys.stderr, flush=True)

    def play(self, view):
        return min(view.hand)
