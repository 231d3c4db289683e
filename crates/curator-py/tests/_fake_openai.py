"""A loopback server that speaks enough of OpenAI's API for the docs' examples: the
Responses API (the Agents SDK's default model) and Chat Completions (LangChain's
``ChatOpenAI``), each answering with one assistant message, not streamed."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ANSWER = "Your parcel is on its way."


def _response(model):
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "model": model,
        "status": "completed",
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": ANSWER, "annotations": []}],
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 10,
            "output_tokens": 6,
            "total_tokens": 16,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def _chat(model):
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": ANSWER}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 6, "total_tokens": 16},
    }


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (the standard library's name)
        length = int(self.headers.get("content-length", 0))
        request = json.loads(self.rfile.read(length) or b"{}")
        self.server.requests.append((self.path, request))
        model = request.get("model", "gpt-4.1")
        if self.path.endswith("/responses"):
            body = _response(model)
        elif self.path.endswith("/chat/completions"):
            body = _chat(model)
        else:
            self.send_error(404)
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


class FakeOpenAI:
    """Starts on a free loopback port; ``base_url`` is its API root; ``requests`` lists what
    it was sent, as (path, body)."""

    def __enter__(self):
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.requests = []
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @property
    def requests(self):
        return self.server.requests

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        return False
