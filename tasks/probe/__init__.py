"""The probe (shell): one pinned, streamed request per endpoint and contract, read as the bytes arrive.

* attempt      one probe request -> one `Attempt`: the request, the headers, the two shells (async, sync)
* body         what a response body says, fed as it arrives (sans I/O): `BodyReader`
* recorder     the fold of the wire into an `Attempt` (pure): `AttemptRecorder`
* sockets      the worker's sockets: every received block stamped when the event loop reads it
* fair_pool    httpcore's pool with one request per kept-alive connection (the probe's and the router's)
* drain        a stream's body read to its end after [DONE], so its connection is kept (the probe and the router)
* worker       the probe worker process: requests on one event loop, bytes timestamped where they arrive
* loop         the worker's event loop: calls taken, requests in flight bounded, slow starts parked
* call_queue   the worker's waiting calls in priority order (plain data, no I/O)
* http_errors  what an httpx exception means: the one map from exception to error class
* discover     discovery: which endpoints serve a model (GET /models/{author}/{slug}/endpoints)
"""

__all__ = ["attempt", "body", "recorder", "sockets", "fair_pool", "drain", "worker", "loop", "call_queue",
           "http_errors", "discover"]
