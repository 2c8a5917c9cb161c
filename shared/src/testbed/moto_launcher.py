# Starts moto on a free port, prints it, and serves until stdin closes: when the owning process exits
# (even by a crash), its end of the pipe closes and the server goes with it.
import sys
import threading

import moto.dynamodb.responses
from moto.server import ThreadedMotoServer

# moto serves requests on threads, and its TransactWriteItems snapshots every table it touches (deepcopy) and,
# when a condition fails, puts the snapshot back: a write another request made to the same table meanwhile is
# lost (an operation's claim silently reverted to an older copy). DynamoDB applies each request atomically, so
# moto's DynamoDB handles one request at a time here; its requests are short (no long polls).
_ddb_lock = threading.RLock()
_call_action = moto.dynamodb.responses.DynamoHandler.call_action


def _serialized(self, *args, **kwargs):
    with _ddb_lock:
        return _call_action(self, *args, **kwargs)


moto.dynamodb.responses.DynamoHandler.call_action = _serialized

server = ThreadedMotoServer(ip_address="127.0.0.1", port=int(sys.argv[1]) if len(sys.argv) > 1 else 0, verbose=False)
server.start()
host, port = server.get_host_and_port()
print(f"PORT {port}", flush=True)
try:
    sys.stdin.read()
finally:
    server.stop()
