"""Kept for the imports of ``bench/abuse.py`` and ``cow006_workers.demo``: a stored upload
becomes a numbered version in ``storage`` (``storage.add_version``, ``storage.store_version``).
"""

from __future__ import annotations

from .storage import add_version

__all__ = ["add_version"]
