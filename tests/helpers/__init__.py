"""Helpers of the test suite, one module a subject; the tests import them as ``helpers.*``.

``tests/`` is on ``sys.path`` through ``pythonpath`` in pyproject's ``[tool.pytest.ini_options]``
(the test folders themselves are not packages: pytest imports their modules by their folder).

- ``services``: PostgreSQL, Redis and the sandbox, each checked once: skip without them, or fail
  where CI requires them (``COW006_REQUIRE_SERVICES=1``, ``COW006_REQUIRE_SANDBOX=1``).
- ``servers``: a server in a subprocess: a free port, its environment, waiting until it answers,
  stopping it; ``wait_for``, polling any check.
- ``data``: rows made directly in the database, real match logs.
- ``api``: the API tests' recording executor and ``Api`` client with shortcuts.
- ``workers``: arenas of real worker processes on Redis and PostgreSQL, and their checks.
- ``races``: one function run by several threads at the same instant.
- ``hostile``: a match with an attacking bot at seat 0, in the sandbox.
- ``hostile_api``: the hostile tests that go through the platform's app.
- ``web``: a seeded arena for the page tests, a tiny HTML tree, replayed placements.
- ``browser``: the app served for Chromium (the browser tests).
"""
