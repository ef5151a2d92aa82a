"""What a page rendered again costs: the CPU of one render ahead, page kind by page kind.

A finished match makes each API process render some pages again (``bench/api.py --writes``
counts them by route: its agents' pages, rating histories and lists of matches, the
leaderboard's pages); this measures what each of those renders costs, in one process and
without the clients: the app is started on a database seeded by ``bench/api.py --keep``
(warming off), each page of ``--pages`` agents is rendered once (its parts held, as in a
warm server), then rendered again ``--rounds`` times through the page cache's own renderer
(the whole app: middleware, routing, dependencies, the route), and the process's CPU per
render is printed, with the CPU of one build of the ladder's whole board.

    python bench/api.py --db cow006_bench --keep            # seeds once
    python bench/renders.py --db cow006_bench [--pages 200] [--rounds 3]

Medians of the rounds, ms of CPU; run old and new side by side on the same database.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

from harness import with_db

from cow006_platform import crud, db

KINDS: dict[str, Callable[[int], tuple[str, str]]] = {
    "agent": lambda a: (f"/api/agents/{a}", ""),
    "ratings": lambda a: (f"/api/agents/{a}/ratings", ""),
    "matches": lambda a: ("/api/matches", f"agent_id={a}"),
    "leaderboard (board held)": lambda a: ("/api/ladders/1/leaderboard", f"offset={50 * (a % 20)}"),
}


async def measure(app: Any, pages: int, rounds: int) -> dict[str, float]:
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    await inbox.put({"type": "lifespan.startup"})
    scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
    lifespan = asyncio.create_task(app(scope, inbox.get, outbox.put))
    started = await outbox.get()
    assert started["type"] == "lifespan.startup.complete", started
    render = app.state.page_cache.renderer
    agents = random.Random(5).sample(range(1, 1001), pages)
    out: dict[str, float] = {}
    for name, page in KINDS.items():
        for a in agents:  # the first render: its parts held afterwards
            assert (await render(*page(a))).status == 200
        times = []
        for _ in range(rounds):
            t = time.process_time()
            for a in agents:
                await render(*page(a))
            times.append((time.process_time() - t) * 1000 / pages)
        out[name] = statistics.median(times)
    parts = app.state.page_cache.fragments
    times = []
    for _ in range(rounds):
        t = time.process_time()
        for _ in range(20):
            parts.invalidate({"ladder:1"})
            with app.state.read_session_factory() as session:
                crud.ladders.board(session, 1, parts)
        times.append((time.process_time() - t) * 1000 / 20)
    out["board (built again)"] = statistics.median(times)
    await inbox.put({"type": "lifespan.shutdown"})
    await outbox.get()
    await lifespan
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", default="postgresql://root@127.0.0.1:5432/postgres")
    ap.add_argument("--db", default="cow006_bench", help="a database seeded by bench/api.py")
    ap.add_argument("--pages", type=int, default=200, help="agents whose pages are rendered")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    os.environ["COW006_DATABASE_URL"] = with_db(db.normalize_url(args.url), args.db)
    os.environ["COW006_DATA_DIR"] = tempfile.mkdtemp()
    os.environ["COW006_CACHE_WARM_PAGES"] = "0"
    from cow006_workers.embedded import embedded_app  # reads the settings set above

    for name, ms in asyncio.run(measure(embedded_app(), args.pages, args.rounds)).items():
        print(f"{name:26} {ms:6.2f} ms of CPU a render")


if __name__ == "__main__":
    main()
