"""Replies with NaN as the card (Python's json would accept it)."""

import _raw

_raw.serve(lambda msg: b'{"id": %d, "card": NaN, "row": NaN}\n' % msg["id"], "nan")
