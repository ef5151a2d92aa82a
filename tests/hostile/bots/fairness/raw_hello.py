"""A raw protocol-1 bot (not through ``cow006.bot``): it writes every host message to stderr
as it arrives, so a test sees the exact ``hello`` line, then plays its lowest card and takes
the cheapest-looking row 0.  Run by a test's own launcher, not the SDK's."""

import json
import sys

for line in sys.stdin:
    sys.stderr.write("HOST " + line)
    sys.stderr.flush()
    msg = json.loads(line)
    kind = msg.get("type")
    if kind == "hello":
        out = {"type": "ready", "protocol": 1, "name": "raw"}
    elif kind == "play":
        out = {"id": msg["id"], "card": min(msg["view"]["hand"])}
    elif kind == "take_row":
        out = {"id": msg["id"], "row": 0}
    elif kind == "match_end":
        break
    else:
        continue
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
