"""Replies with JSON nested a thousand levels deep (json.loads would recurse on it)."""

import _raw

DEEP = b"[" * 1000 + b"]" * 1000
_raw.serve(lambda msg: b'{"id": %d, "card": %s}\n' % (msg["id"], DEEP), "nested")
