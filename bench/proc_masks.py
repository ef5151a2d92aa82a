"""What the /proc masks of the sandbox cost a bot start (docs/sandbox.md, "The host's global
/proc files").

Starts a sandboxed ``python -c pass`` (``cow006.sandbox.Sandbox.spawn``) many times, with the
masks (``mask_binds``, one read-only bind per masked file) and without, interleaved so that
both see the same load, and prints the median wall time and the median CPU time of the child
processes (bwrap and the interpreter) of each, with their ratio.  Needs a working sandbox.

    python bench/proc_masks.py [--starts N]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from collections.abc import Callable

from cow006 import launch, sandbox
from cow006.sandbox import _command

Masks = Callable[[sandbox.Sandbox], list[tuple[str, str]]]


def _one(sb: sandbox.Sandbox, masks: Masks) -> tuple[float, float]:
    _command.mask_binds = masks  # what bwrap_command binds over /proc for this start
    argv = [launch.python_executable(), "-I", "-S", "-B", "-c", "pass"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = sb.spawn(argv)
    proc.communicate(timeout=60)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return wall, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--starts", type=int, default=60, help="starts of each kind")
    args = ap.parse_args()
    sb = sandbox.Sandbox()
    status = sandbox.probe(sb)
    if not status.ok:
        print(f"no working sandbox: {status.reason}", file=sys.stderr)
        return 2
    real: Masks = _command.mask_binds

    def none(_sb: sandbox.Sandbox) -> list[tuple[str, str]]:
        return []

    times: dict[str, list[tuple[float, float]]] = {"masks": [], "none": []}
    try:
        _one(sb, real)  # warm both
        _one(sb, none)
        for i in range(args.starts):
            order = [("masks", real), ("none", none)]
            for name, masks in order if i % 2 else order[::-1]:
                times[name].append(_one(sb, masks))
    finally:
        _command.mask_binds = real
    wall = {k: statistics.median(w for w, _ in v) * 1000 for k, v in times.items()}
    cpu = {k: statistics.median(c for _, c in v) * 1000 for k, v in times.items()}
    print(f"binds over /proc: {len(real(sb))}, {args.starts} starts of each")
    print(
        f"wall (median): masks {wall['masks']:.1f} ms, none {wall['none']:.1f} ms, "
        f"ratio {wall['masks'] / wall['none']:.2f}"
    )
    print(
        f"child CPU (median): masks {cpu['masks']:.1f} ms, none {cpu['none']:.1f} ms, "
        f"ratio {cpu['masks'] / cpu['none']:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
