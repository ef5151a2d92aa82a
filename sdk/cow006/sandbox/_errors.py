"""The sandbox's one error: it cannot run a bot here (a ``Cow006Error``, one sentence)."""

from __future__ import annotations

from .._errors import AgentLoadError


class SandboxError(AgentLoadError):
    """The sandbox cannot run a bot: it is missing, misconfigured, or out of slots."""
