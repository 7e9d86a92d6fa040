"""Not an MCP server: it answers every line on stdin with garbage, or with nothing (``--silent``)."""

import sys
import time

if "--silent" in sys.argv:
    time.sleep(300)
for _line in sys.stdin:
    sys.stdout.write("this is not json-rpc {{{\n")
    sys.stdout.flush()
