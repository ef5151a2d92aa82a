"""Replies with a line that is not JSON."""

import _raw

_raw.serve(lambda msg: b'{"id": %d, "card": \n' % msg["id"], "malformed")
