"""The arena's match workers: Celery tasks, scheduling and sandboxed match execution.

Not built yet: it arrives with the workers issue.
"""
