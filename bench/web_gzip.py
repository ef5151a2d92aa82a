"""Compression of the site's answers: bytes saved, and what compressing each cache hit costs.

On a seeded SQLite arena (``tests/helpers/web.seed``, in-process, no server), prints for a few
pages, scripts and API answers their size as sent without and with gzip, then times cache hits
of one cached API answer with gzip accepted, side by side in one run (alternating, in either
order): the entry compressed once and kept (what the cache does), against the copy dropped
before each hit (what a gzip middleware outside the cache would do: compress every hit).
Medians of ``--pairs`` pairs; the figures include the test client's own overhead.

    PYTHONPATH=tests python bench/web_gzip.py [--pairs 600]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from fastapi.testclient import TestClient
from helpers.api import RecordingExecutor
from helpers.web import seed

from cow006_platform.app import create_app
from cow006_platform.settings import Settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=600)
    args = parser.parse_args()
    tmp = tempfile.mkdtemp()
    settings = Settings(database_url=f"sqlite:///{tmp}/a.db", data_dir=tmp)
    app = create_app(settings, RecordingExecutor())
    with TestClient(app) as client:
        s = seed(app.state.session_factory, matches=12)
        log = f"/api/matches/{s.match_ids[0]}/log"
        paths = ["/", f"/ladders/{s.ladder_id}", f"/matches/{s.match_ids[0]}", "/static/app.css"]
        paths += ["/static/replay.js", "/api/matches", log]
        for path in paths:
            plain = len(client.get(path, headers={"Accept-Encoding": "identity"}).content)
            with client.stream("GET", path, headers={"Accept-Encoding": "gzip"}) as r:
                packed = len(b"".join(r.iter_raw()))
            print(f"{path:28s} identity {plain:7d} B   gzip {packed:6d} B  ({packed / plain:.0%})")
        cache = app.state.page_cache
        client.get(log, headers={"Accept-Encoding": "gzip"})
        times: dict[str, list[float]] = {"once": [], "each": []}
        for i in range(args.pairs):
            for mode in ("once", "each") if i % 2 else ("each", "once"):
                if mode == "each":
                    cache.entries[log].gzipped = None
                start = time.perf_counter()
                r = client.get(log, headers={"Accept-Encoding": "gzip"})
                times[mode].append(time.perf_counter() - start)
                assert r.headers["x-cache"] == "hit"
        once, each = (statistics.median(times[m]) * 1e6 for m in ("once", "each"))
        print(
            f"hit of {log}: compressed once {once:.0f} us, compressed per hit {each:.0f} us "
            f"(median of {args.pairs}; per hit / once = {each / once:.2f})"
        )


if __name__ == "__main__":
    main()
