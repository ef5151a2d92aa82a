"""``python -m cow006``: the ``cow006`` command line."""

from __future__ import annotations

from .cli import main

if __name__ == "__main__":
    main()
