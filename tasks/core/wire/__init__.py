"""The wire, read once for the probe and the router alike (docs/openrouter-api.md section 3), sans I/O.

    sse.py      bytes -> events: WHATWG line ends (CRLF, LF, a bare CR), fields, the data payload, bounded memory.
                `SSEParser` reads a stream line by line (the probe); `split_events` + `read_event` cut and read
                whole events with their bytes untouched (the router's gate forwards them byte for byte).
    chunks.py   one parsed chunk -> what it says: text or not (the one "first content" rule), finish reasons,
                the error and its numeric code, the provider, the usage.
    tools.py    `delta.tool_calls` fragments and their assembly by index; the capped text the fold keeps.
    fold.py     chunks -> what they add up to (`ChunkFold`): text, reasoning, tool calls, finish reasons, usage,
                provider, each chunk's error; the probe's record (tasks/probe/recorder.py) and the router's judged
                answer (provider_canary/router/answer.py) are both this fold plus their own rules about faults and time.
    provider_keys.py  the keys OpenRouter accepts in a request's `provider` object (the probe, the simulator, the
                router).

A module here imports nothing of the project but tasks/core's plain records.
"""
