"""The query layer: what the API and the web pages read and write, as typed rows.

One module per resource (``agents``, ``evaluations``, ``ladders``, ``leagues``, ``matches``,
``users``; ``validations``: a version's queue place and validation match).  A read
returns a response model of ``schemas`` (or a ``Page`` of them, or a row type of its own for
a page-only table), validated with ``model_validate(row, from_attributes=True)`` from rows
that select what the answer shows.  A write checks what the caller may do, changes the rows
and commits.  Both refuse with a ``Refused`` (``NotFound``, ``Forbidden``, ``Conflict``,
``Invalid``, ``TooMany``), which the routes answer as an HTTP error and the pages as an error
page: there is no FastAPI here.  Routes parse the request, call one function of this layer,
and answer what it returns.
"""

from . import agents, evaluations, ladders, leagues, matches, users, validations
from ._errors import Conflict, Forbidden, Invalid, NotFound, Refused, TooMany
from ._rows import Paging, by_name_or_id

__all__ = [
    "Conflict",
    "Forbidden",
    "Invalid",
    "NotFound",
    "Paging",
    "Refused",
    "TooMany",
    "agents",
    "by_name_or_id",
    "evaluations",
    "ladders",
    "leagues",
    "matches",
    "users",
    "validations",
]
