"""The arena's match workers: Celery tasks, the scheduler and the reaper, ``cow006 serve``.

What plays a match: ``runs`` (a match run under a lease, from its claim to its stored result,
and what follows it), ``lease`` (the claim, its fencing token, the heartbeat), ``play`` (one
match with real bot processes, sandboxed) and ``validation`` (a version's smoke match at a
fair table, and its verdict).  Who asks for it: ``tasks`` (the Celery tasks, by the names of
``cow006_platform.tasknames``) on ``celery_app``, and ``embedded`` (the same code run in the
API's own process, without a broker).  ``scheduler`` (ladder refills, league rounds, the
reaper) and ``matchmaking`` (who plays whom) keep the work coming; ``serve`` / ``demo`` are the
one-machine arena and ``cli`` the ``cow006`` command.

This package imports the platform and the SDK; the platform never imports it (it sends tasks
by name).
"""
