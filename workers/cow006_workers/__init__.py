"""The arena's match workers: Celery tasks, the scheduler and the reaper, ``cow006 serve``.

``celery_app`` (the Celery app and its settings), ``tasks`` (the tasks, by name),
``jobs`` (what a task does: a match under a lease, a validation), ``lease`` (the heartbeat),
``scheduler`` (ladder refills, league rounds, the reaper), ``matchmaking`` (who plays whom),
``serve`` / ``demo`` (the one-machine arena) and ``cli`` (the ``cow006`` command).
The platform never imports this package: it sends tasks by name.
"""
