# Starts moto on a free port, prints it, and serves until stdin closes: when the owning process exits
# (even by a crash), its end of the pipe closes and the server goes with it.
import sys

from moto.server import ThreadedMotoServer

server = ThreadedMotoServer(ip_address="127.0.0.1", port=int(sys.argv[1]) if len(sys.argv) > 1 else 0, verbose=False)
server.start()
host, port = server.get_host_and_port()
print(f"PORT {port}", flush=True)
try:
    sys.stdin.read()
finally:
    server.stop()
