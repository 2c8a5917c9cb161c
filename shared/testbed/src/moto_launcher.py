# Starts moto on a free port, prints it, and serves until stdin closes: when the owning process exits
# (even by a crash), its end of the pipe closes and the server goes with it. With STRATO_MOTO_WATCH_PID set
# (one server for a whole nextest run) it serves until that process is gone instead.
import os
import sys
import threading
import time

import moto.backends
import moto.dynamodb.responses
import moto.eks.models
import moto.s3.models
import moto.sqs.models
import moto.sqs.responses
import werkzeug.serving
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

# SQS FIFO: a message group is blocked while one of its messages is in flight. moto's long poll takes its
# list of blocked groups once, when the poll starts, and its requests run on threads without a lock: a poll
# that began before a group's first message was received still hands out the group's next message, so two
# consumers process one group at once (the dispatcher started two runners for one operation that way). Here
# SQS requests run one at a time, and a long poll is a series of instant receives that lets others in while
# it waits, so each attempt sees the groups blocked at that moment, as on AWS.
_sqs_lock = threading.Lock()
_sqs_call_action = moto.sqs.responses.SQSResponse.call_action
_receive = moto.sqs.models.SQSBackend.receive_message


def _sqs_serialized(self, *args, **kwargs):
    with _sqs_lock:
        return _sqs_call_action(self, *args, **kwargs)


def _receive_without_stale_groups(
    self, queue_name, count, wait_seconds_timeout, visibility_timeout, message_attribute_names=None
):
    deadline = time.monotonic() + (wait_seconds_timeout or 0)
    while True:
        got = _receive(self, queue_name, count, 0, visibility_timeout, message_attribute_names)
        if got or time.monotonic() >= deadline:
            return got
        # Called under _sqs_lock (from _sqs_serialized): let the other requests run while this poll waits.
        _sqs_lock.release()
        try:
            time.sleep(0.05)
        finally:
            _sqs_lock.acquire()


# EKS answers a node group created without `updateConfig` with its default `{"maxUnavailable": 1}`; moto
# answers none, and the AWS provider 5 then plans to add that default on every plan after the create.
_nodegroup_init = moto.eks.models.Nodegroup.__init__


def _nodegroup_with_default_update_config(self, *args, **kwargs):
    _nodegroup_init(self, *args, **kwargs)
    if not self.update_config:
        self.update_config = {"maxUnavailable": 1}


moto.eks.models.Nodegroup.__init__ = _nodegroup_with_default_update_config

# A Lambda event source mapping (infra/ creates them) makes moto deliver inside SendMessage: it receives the
# new message with the queue's visibility timeout and invokes the function in docker (none here), so the
# sender hangs and the message stays in flight for the visibility timeout. devstack runs the mappings itself,
# so moto's own delivery is turned off.
_add_message = moto.sqs.models.Queue.add_message


def _add_message_without_lambda(self, message):
    mappings, self.lambda_event_source_mappings = self.lambda_event_source_mappings, {}
    try:
        _add_message(self, message)
    finally:
        self.lambda_event_source_mappings = mappings


moto.sqs.models.Queue.add_message = _add_message_without_lambda
# Deleting an object version in a bucket whose versioning is Suspended (destroy suspends it before emptying
# the bucket) drops every version of the key and crashes on a delete marker (no `dispose`): a 500 for ever,
# and Terraform's force_destroy retries until its timeout.
moto.s3.models.FakeDeleteMarker.dispose = lambda self, *args, **kwargs: None
moto.sqs.responses.SQSResponse.call_action = _sqs_serialized
moto.sqs.models.SQSBackend.receive_message = _receive_without_stale_groups

# Per request, moto first asks whether the request's host names one of its modules — a listing of its package
# directory and a stat of each of its ~150 entries, under the one lock that picks every request's backend — and
# werkzeug formats a request log line (thrown away: the server's stderr is /dev/null). Together about 14 % of
# py-spy's samples of the server during a test run (2026-12-01). The directory does not change while it
# serves (listed once), and the request lines are not written at all (errors still are).
_moto_modules = tuple(moto.backends.list_of_moto_modules())
moto.backends.list_of_moto_modules = lambda: _moto_modules
werkzeug.serving.WSGIRequestHandler.log_request = lambda self, *args, **kwargs: None

server = ThreadedMotoServer(ip_address="127.0.0.1", port=int(sys.argv[1]) if len(sys.argv) > 1 else 0, verbose=False)
server.start()
host, port = server.get_host_and_port()
print(f"PORT {port}", flush=True)
watched = os.environ.get("STRATO_MOTO_WATCH_PID")
try:
    if watched:
        # Shared by a nextest run: detached from the test that started it, it serves until the nextest
        # process is gone. Its stdout (the starter's pipe) is closed once the port is read.
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        while True:
            try:
                os.kill(int(watched), 0)
            except ProcessLookupError:
                break
            except PermissionError:
                pass
            time.sleep(1)
    else:
        sys.stdin.read()
finally:
    server.stop()
