"""Fixtures of the SDK's tests."""

from __future__ import annotations

import os

import pytest


@pytest.fixture
def sandbox_works() -> None:
    """Skip where the sandbox does not work, or fail under ``COW006_REQUIRE_SANDBOX=1``."""
    from cow006 import sandbox

    status = sandbox.probe()
    if not status.ok:
        if os.environ.get("COW006_REQUIRE_SANDBOX") == "1":
            pytest.fail(f"the sandbox is required here but does not work: {status.reason}")
        pytest.skip(f"no working sandbox on this machine: {status.reason}")
