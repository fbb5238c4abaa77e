"""whitebox-cli serve driven by the official openai Python client (and raw HTTP for what a client
library would refuse to send), on SmolLM2 (the default model of the cache).

    test_serve_openai.py WHITEBOX_CLI

Each check raises AssertionError with what differed; every check runs, and the process exits 1 when
any failed.
"""
import concurrent.futures
import gzip
import http.client
import json
import math
import re
import socket
import subprocess
import sys
import threading
import time
import traceback

import openai

CLI = sys.argv[1]
CTX = 512
PROMPT = "Name a color."


class Server:
    """One `whitebox-cli serve --port 0` process; the port comes from its first line on stderr."""

    def __init__(self, *args, key=None):
        self.key = key
        if key:
            args = (*args, "--api-key", key)
        self.proc = subprocess.Popen([CLI, "serve", "--port", "0", "--ctx", str(CTX), *args],
                                     stderr=subprocess.PIPE, text=True)
        self.log = []
        deadline = time.time() + 60
        self.port = None
        while self.port is None:
            line = self.proc.stderr.readline()
            if not line:
                raise AssertionError(f"serve exited before listening: {''.join(self.log)}")
            self.log.append(line)
            m = re.search(r"serving '([^']+)' at http://127\.0\.0\.1:(\d+)/v1", line)
            if m:
                self.model, self.port = m.group(1), int(m.group(2))
            if time.time() > deadline:
                raise AssertionError("serve did not start listening within 60 s")
        threading.Thread(target=lambda: self.log.extend(self.proc.stderr), daemon=True).start()

    def client(self, api_key="none"):
        return openai.OpenAI(base_url=f"http://127.0.0.1:{self.port}/v1", api_key=api_key, max_retries=0,
                             timeout=60)

    def raw(self, method, path, body=None, headers=None, extra=None):
        """(status, parsed JSON or text) of one plain HTTP request; extra: headers added to the defaults
        (a Transfer-Encoding: chunked among them sends the body chunked)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        if headers is None:
            headers = {"Content-Type": "application/json"}
            if self.key:
                headers["Authorization"] = f"Bearer {self.key}"
        headers = dict(headers, **(extra or {}))
        chunked = headers.get("Transfer-Encoding") == "chunked"
        try:
            conn.request(method, path, body=iter([body]) if chunked else body, headers=headers,
                         encode_chunked=chunked)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server may answer (413) and close before a huge body is sent; the answer still counts
        resp = conn.getresponse()
        data = resp.read().decode()
        conn.close()
        try:
            return resp.status, json.loads(data)
        except json.JSONDecodeError:
            return resp.status, data

    def metric(self, name):
        status, text = self.raw("GET", "/metrics")
        assert status == 200, status
        m = re.search(rf"^{name} (\S+)$", text, re.M)
        assert m, f"{name} missing from /metrics"
        return float(m.group(1))

    def alive(self):
        status, body = self.raw("GET", "/health")
        assert status == 200 and body == {"status": "ok"}, (status, body)
        assert self.proc.poll() is None, "the server exited"

    def stop(self):
        self.proc.terminate()
        assert self.proc.wait(timeout=30) == 0, f"serve exited with {self.proc.returncode}: {''.join(self.log)}"


def generate_json(*args):
    out = subprocess.run([CLI, "generate", "--ctx", str(CTX), "--json", *args], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


# The reply schema of the structured-output checks: every string bounded, so a reply fits max_tokens.
PET_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 16},
        "color": {"enum": ["red", "green", "blue"]},
        "friendly": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 10}, "maxItems": 3},
    },
    "required": ["name", "color", "friendly"],
    "additionalProperties": False,
}


def schema_problem(schema, doc, at="#"):
    """What makes doc invalid against a schema of the keywords PET_SCHEMA uses ("" when valid): a
    validator of its own, independent of the server's schema -> grammar conversion."""
    if "enum" in schema:
        return "" if doc in schema["enum"] else f"{at}: {doc!r} is not one of {schema['enum']}"
    kind = schema.get("type")
    if kind == "string":
        if not isinstance(doc, str):
            return f"{at}: not a string"
        if not schema.get("minLength", 0) <= len(doc) <= schema.get("maxLength", len(doc)):
            return f"{at}: length {len(doc)} out of bounds"
    elif kind == "boolean" and not isinstance(doc, bool):
        return f"{at}: not a boolean"
    elif kind == "array":
        if not isinstance(doc, list) or len(doc) > schema.get("maxItems", len(doc)):
            return f"{at}: not an array of at most {schema.get('maxItems')} items"
        return next((p for i, v in enumerate(doc) if (p := schema_problem(schema["items"], v, f"{at}/{i}"))), "")
    elif kind == "object":
        if not isinstance(doc, dict):
            return f"{at}: not an object"
        missing = [k for k in schema.get("required", []) if k not in doc]
        extra = [k for k in doc if k not in schema["properties"]]
        if missing or extra:
            return f"{at}: missing {missing}, unexpected {extra}"
        return next((p for k, v in doc.items() if (p := schema_problem(schema["properties"][k], v, f"{at}/{k}"))), "")
    return ""


FAILED = []


def check(name, fn):
    """Runs one check; a failure is reported and counted, and the next check still runs."""
    t = time.time()
    try:
        fn()
        print(f"ok   {name} ({time.time() - t:.1f} s)", flush=True)
    except Exception:  # noqa: BLE001 - every failure is reported, whatever its kind
        print(f"FAIL {name} ({time.time() - t:.1f} s)", flush=True)
        traceback.print_exc()
        FAILED.append(name)


def chat(client, model, **kw):
    args = dict(model=model, messages=[{"role": "user", "content": PROMPT}], seed=42, temperature=0.8,
                max_tokens=8)
    args.update(kw)
    return client.chat.completions.create(**args)


def streamed_text(stream):
    text, usage, finish = "", None, None
    for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        for c in chunk.choices:
            text += c.delta.content or ""
            finish = c.finish_reason or finish
    return text, usage, finish


def main():
    srv = Server("--parallel", "2", "--queue", "16")
    client = srv.client()
    state = {}

    def models_list():
        models = client.models.list().data
        assert [m.id for m in models] == [srv.model], [m.id for m in models]

    def chat_matches_generate():
        r = chat(client, srv.model, logprobs=True, top_logprobs=5)
        ref = generate_json("--chat", "-p", PROMPT, "--seed", "42", "--temp", "0.8", "-n", "8", "--top-candidates", "5")
        choice = r.choices[0]
        assert choice.message.content == ref["text"], (choice.message.content, ref["text"])
        assert choice.finish_reason == ("length" if ref["stop_reason"] == "max_tokens" else "stop")
        lps = choice.logprobs.content
        assert len(lps) == len(ref["steps"]) == r.usage.completion_tokens, (len(lps), len(ref["steps"]))
        assert r.usage.prompt_tokens == ref["prompt_tokens"], (r.usage.prompt_tokens, ref["prompt_tokens"])
        assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
        for lp, step in zip(lps, ref["steps"]):
            assert bytes(lp.bytes) == step["piece"].encode(), (lp.bytes, step["piece"])
            cands = step["candidates"]
            assert len(lp.top_logprobs) == 5
            for top, c in zip(lp.top_logprobs, cands):
                assert bytes(top.bytes) == c["piece"].encode() and abs(top.logprob - math.log(c["p_raw"])) < 1e-4, \
                    (top, c)
            chosen = [c for c in cands if c["id"] == step["token"]]
            if chosen:
                assert abs(lp.logprob - math.log(chosen[0]["p_raw"])) < 1e-4, (lp.logprob, chosen)
            else:  # drawn from outside the top 5: no likelier than the fifth
                assert lp.logprob <= math.log(cands[-1]["p_raw"]) + 1e-4, (lp.logprob, cands[-1])
        state["text"] = ref["text"]

    def seeded_reproducible_and_streamed():
        again = chat(client, srv.model).choices[0].message.content
        assert again == state["text"], (again, state["text"])
        text, usage, finish = streamed_text(chat(client, srv.model, stream=True, stream_options={"include_usage": True}))
        assert text == state["text"], (text, state["text"])
        assert usage is not None and usage.completion_tokens == 8 and finish == "length", (usage, finish)

    def stop_strings():
        text = state["text"]
        k = len(text) // 2
        stop = text[k:k + 2]
        r = chat(client, srv.model, stop=[stop])
        assert r.choices[0].message.content == text[:text.find(stop)], (r.choices[0].message.content, text, stop)
        assert r.choices[0].finish_reason == "stop"
        text_s, _, finish = streamed_text(chat(client, srv.model, stop=stop, stream=True))
        assert text_s == text[:text.find(stop)] and finish == "stop", (text_s, finish)

    def completions_greedy():
        r = client.completions.create(model=srv.model, prompt="The capital of France is", max_tokens=6,
                                      temperature=0, logprobs=3)
        ref = generate_json("-p", "The capital of France is", "--temp", "0", "-n", "6")
        c = r.choices[0]
        assert c.text == ref["text"], (c.text, ref["text"])
        assert len(c.logprobs.tokens) == r.usage.completion_tokens == len(ref["tokens"])
        assert r.usage.prompt_tokens == ref["prompt_tokens"]
        for lp, top in zip(c.logprobs.token_logprobs, c.logprobs.top_logprobs):
            assert len(top) == 3 and abs(lp - max(top.values())) < 1e-6, (lp, top)  # greedy takes the likeliest

    def streamed_completion_offsets():
        # text_offset counts from the start of the reply in every chunk, as in the whole response.
        whole = client.completions.create(model=srv.model, prompt="The capital of France is", max_tokens=6,
                                          temperature=0, logprobs=1)
        offsets = []
        for chunk in client.completions.create(model=srv.model, prompt="The capital of France is", max_tokens=6,
                                               temperature=0, logprobs=1, stream=True):
            for c in chunk.choices:
                if c.logprobs:
                    offsets += c.logprobs.text_offset
        assert offsets == whole.choices[0].logprobs.text_offset and offsets[-1] > 0, \
            (offsets, whole.choices[0].logprobs.text_offset)

    def keyless_refuses_other_sites():
        # Without a key only requests addressed to this machine are answered: a web page of another
        # site (Origin) or a name rebound to 127.0.0.1 (Host) gets 403; a local page is served.
        for extra, code in [({"Host": f"evil.example:{srv.port}"}, "forbidden_host"),
                            ({"Origin": "http://evil.example"}, "forbidden_origin"),
                            ({"Origin": "null"}, "forbidden_origin")]:
            for method, path, body in [("GET", "/v1/models", None),
                                       ("POST", "/v1/chat/completions", json.dumps(
                                           {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}))]:
                got, reply = srv.raw(method, path, body, extra=extra)
                assert got == 403 and reply["error"]["code"] == code, (extra, path, got, reply)
        got, reply = srv.raw("GET", "/v1/models", extra={"Origin": f"http://localhost:{srv.port}",
                                                          "Host": f"localhost:{srv.port}"})
        assert got == 200 and reply["data"], (got, reply)
        srv.alive()

    def eight_concurrent_clients():
        def one(i):
            if i % 2:
                return streamed_text(chat(srv.client(), srv.model, stream=True))[0]
            return chat(srv.client(), srv.model).choices[0].message.content
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            texts = list(pool.map(one, range(8)))
        assert texts == [state["text"]] * 8, texts

    def hostile_requests():
        path = "/v1/chat/completions"
        good = {"model": srv.model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}
        cases = [
            ("invalid JSON", b'{"messages": [', 400, None),
            ("not an object", b'[1, 2]', 400, None),
            ("10 MB body", b'{"x": "' + b"a" * (10 << 20) + b'"}', 413, None),
            ("negative max_tokens", dict(good, max_tokens=-5), 400, "max_tokens"),
            ("zero max_tokens", dict(good, max_tokens=0), 400, "max_tokens"),
            ("temperature of the wrong type", dict(good, temperature="hot"), 400, "temperature"),
            ("messages of the wrong type", dict(good, messages="hi"), 400, "messages"),
            ("message without a role", dict(good, messages=[{"content": "hi"}]), 400, "messages[0].role"),
            ("top_logprobs over 20", dict(good, logprobs=True, top_logprobs=50), 400, "top_logprobs"),
            ("stop of the wrong type", dict(good, stop=5), 400, "stop"),
            ("logit_bias beyond the vocabulary", dict(good, logit_bias={"99999999": 1}), 400, "logit_bias"),
            ("prompt over the context", dict(good, messages=[{"role": "user", "content": "word " * 2 * CTX}]), 400,
             "messages"),
            ("unknown model", dict(good, model="gpt-17"), 404, "model"),
        ]
        for name, body, status, param in cases:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            got, reply = srv.raw("POST", path, data)
            assert got == status, f"{name}: status {got}, expected {status}: {reply}"
            err = reply["error"]
            assert err["message"] and err["type"] and (param is None or err["param"] == param), f"{name}: {reply}"
            srv.alive()
        # httplib caps only a Content-Length body: a chunked or compressed one must be refused unread.
        small = json.dumps(good).encode()
        for name, extra, body, status in [
                ("chunked body", {"Transfer-Encoding": "chunked"}, small, 411),
                ("gzip body", {"Content-Encoding": "gzip"}, gzip.compress(small), 415)]:
            got, reply = srv.raw("POST", path, body, extra=extra)
            assert got == status and reply["error"]["message"], f"{name}: status {got}, expected {status}: {reply}"
            srv.alive()
        got, reply = srv.raw("POST", "/v1/completions", json.dumps({"prompt": 5}).encode())
        assert got == 400 and reply["error"]["param"] == "prompt", reply
        try:
            chat(client, "no-such-model")
            raise AssertionError("an unknown model was accepted")
        except openai.NotFoundError as e:
            assert e.body["code"] == "model_not_found", e.body
        assert srv.metric('whitebox_requests_total{code="413"}') == 1
        chat(client, srv.model, max_tokens=1)  # and it still generates

    def queue_full_and_disconnect():
        # One session, no waiting room, a key: the second request at once gets 429; once the first
        # client hangs up mid-stream its session is free and the next request is served.
        small = Server("--parallel", "1", "--queue", "0", key="sekrit")
        try:
            keyed = small.client("sekrit")
            assert small.raw("GET", "/health", headers={})[0] == 200  # no key needed
            status, body = small.raw("GET", "/v1/models", headers={})
            assert status == 401 and body["error"]["code"] == "invalid_api_key", (status, body)
            try:
                small.client("wrong").models.list()
                raise AssertionError("a wrong key was accepted")
            except openai.AuthenticationError:
                pass
            stream = chat(keyed, small.model, stream=True, max_tokens=CTX - 64, extra_body={"ignore_eos": True})
            it = iter(stream)
            for _ in range(3):
                next(it)
            try:
                chat(keyed, small.model, max_tokens=1)
                raise AssertionError("a second request was accepted with the only session busy and no queue")
            except openai.RateLimitError as e:
                assert e.body["code"] == "queue_full", e.body
            stream.close()  # the client goes away mid-stream
            t0 = time.time()
            while small.metric("whitebox_sessions_busy") != 0:
                assert time.time() - t0 < 10, "the session was still busy 10 s after its client left"
                time.sleep(0.1)
            r = chat(keyed, small.model, max_tokens=2)
            assert r.choices[0].message.content, r
            assert small.metric("whitebox_generations_cancelled_total") == 1
            assert small.metric("whitebox_completion_tokens_total") < CTX - 64 + 2, "the cancelled reply ran on"
            # The same for a client that gives up on a non-streamed request.
            body = json.dumps({"messages": [{"role": "user", "content": PROMPT}], "max_tokens": CTX - 64,
                               "ignore_eos": True}).encode()
            sock = socket.create_connection(("127.0.0.1", small.port))
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sekrit\r\n"
                         b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
            t0 = time.time()
            while small.metric("whitebox_sessions_busy") != 1:
                assert time.time() - t0 < 30, "the non-streamed request did not start"
                time.sleep(0.1)
            sock.close()
            t0 = time.time()
            while small.metric("whitebox_sessions_busy") != 0:
                assert time.time() - t0 < 10, "the session was still busy 10 s after its non-streaming client left"
                time.sleep(0.1)
            assert small.metric("whitebox_generations_cancelled_total") == 2
            assert chat(keyed, small.model, max_tokens=2).choices[0].message.content
        finally:
            small.stop()

    def prompt_cache():
        # llama-server's cache_prompt: a request may start from the cache the last one left (one session,
        # so the second lands where the first ran). The same chat again reuses all of its prompt but the
        # last token, reported as usage.prompt_tokens_details.cached_tokens; without it a request starts
        # empty and gives what generate gives.
        own = Server("--parallel", "1", "--queue", "1")
        try:
            client = own.client()
            first = chat(client, own.model, extra_body={"cache_prompt": True})
            again = chat(client, own.model, extra_body={"cache_prompt": True})
            cached = again.usage.prompt_tokens_details.cached_tokens
            assert cached == again.usage.prompt_tokens - 1, (cached, again.usage)
            assert first.usage.prompt_tokens_details.cached_tokens == 0, first.usage
            plain = chat(client, own.model)
            assert plain.usage.prompt_tokens_details.cached_tokens == 0, plain.usage
            assert plain.choices[0].message.content == state["text"], (plain.choices[0].message.content, state)
        finally:
            own.stop()

    def waiting_client_leaves():
        # A client that leaves while its request waits for the only session: once the session is free
        # the request is dropped unstarted, counted as abandoned in the queue, not as a generation (nor
        # a cancelled one); the running reply whose client then leaves is the one cancelled generation.
        own = Server("--parallel", "1", "--queue", "1")
        try:
            client = own.client()
            running = chat(client, own.model, stream=True, max_tokens=CTX - 64, extra_body={"ignore_eos": True})
            it = iter(running)
            for _ in range(3):
                next(it)
            waiting = chat(client, own.model, stream=True, max_tokens=4)
            t0 = time.time()
            while own.metric("whitebox_queue_waiting") != 1:
                assert time.time() - t0 < 10, "the second request did not wait"
                time.sleep(0.05)
            waiting.close()
            # Its handler looks at the connection every 100 ms; give it ample time to notice before
            # the session frees (else the job would start, and be a cancelled generation).
            time.sleep(1.0)
            running.close()
            t0 = time.time()
            while own.metric("whitebox_queue_abandoned_total") != 1 or own.metric("whitebox_sessions_busy") != 0:
                assert time.time() - t0 < 10, "the abandoned request was not counted within 10 s"
                time.sleep(0.1)
            counts = {name: own.metric(name) for name in [
                "whitebox_generations_total", "whitebox_generations_cancelled_total",
                "whitebox_generations_interrupted_total", "whitebox_queue_dropped_total", "whitebox_queue_waiting"]}
            assert counts == {"whitebox_generations_total": 1, "whitebox_generations_cancelled_total": 1,
                              "whitebox_generations_interrupted_total": 0, "whitebox_queue_dropped_total": 0,
                              "whitebox_queue_waiting": 0}, counts
        finally:
            own.stop()

    def slow_clients_are_timed_out():
        # One session and no queue: 5 connection threads (sessions + queue + 4, HttpServer::routes).
        # Five clients send a request a byte every 0.2 s, each byte well inside httplib's 5 s read
        # timeout (which alone never times them out): three dribble their headers, two a POST body.
        # They hold every thread until --request-timeout 1 answers each with 408 and closes it; a
        # request on another connection is answered then, while the slow ones would still be sending.
        limit, margin = 1.0, 1.5
        out = subprocess.run([CLI, "serve", "--port", "0", "--request-timeout", "0"], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 1 and "--request-timeout" in out.stderr, out.stderr
        own = Server("--parallel", "1", "--queue", "0", "--request-timeout", "1")
        heads = [b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "] * 3 + \
                [b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 200\r\n\r\n"] * 2
        slow = []
        try:
            start = time.time()
            for head in heads:
                sock = socket.create_connection(("127.0.0.1", own.port))
                sock.sendall(head)
                sock.setblocking(False)
                slow.append(sock)
            health = {}

            def ask():
                health["reply"] = own.raw("GET", "/health")
                health["at"] = time.time() - start
            asker = threading.Thread(target=ask)
            asker.start()
            answers, closed_at = [b""] * len(slow), [None] * len(slow)
            for _ in range(50):  # 10 s of bytes (a 200-byte body or an endless header line never ends sooner)
                for k, sock in enumerate(slow):
                    while closed_at[k] is None:  # what the server sent, before sending more
                        try:
                            data = sock.recv(4096)
                        except BlockingIOError:
                            break
                        except OSError:
                            data = b""
                        answers[k] += data
                        if not data:
                            closed_at[k] = time.time() - start
                    if closed_at[k] is None:
                        try:
                            sock.send(b"a")
                        except OSError:
                            closed_at[k] = time.time() - start
                if None not in closed_at and "at" in health:
                    break
                time.sleep(0.2)
            still = [k for k, t in enumerate(closed_at) if t is None]
            assert not still, f"slow clients {still} still connected after 10 s of dribbling"
            late = [round(t, 2) for t in closed_at if t > limit + margin]
            assert not late, f"slow clients closed at {late} s, past the {limit} s timeout + {margin} s"
            for a in answers:
                assert a.startswith(b"HTTP/1.1 408") and b"request_timeout" in a, a[:300]
            asker.join(timeout=30)
            assert health.get("reply") == (200, {"status": "ok"}), health
            assert health["at"] <= limit + margin, f"a normal request waited {health['at']:.2f} s"
            # Answered only once a slow client's thread was free: they held every thread (else this
            # test would not show that the timeout frees them).
            assert health["at"] >= limit / 2, f"a normal request was answered at once ({health['at']:.2f} s)"
            status, text = own.raw("GET", "/metrics")
            m = re.search(r'^whitebox_requests_total\{code="408"\} (\S+)$', text, re.M)
            assert m and float(m.group(1)) == len(slow), f"408s counted: {m and m.group(1)}"
            own.alive()
        finally:
            for sock in slow:
                sock.close()
            own.stop()

    def sigterm_ends_running_generations():
        # SIGTERM cancels the running reply (and what waits) instead of waiting for it to complete:
        # a 448-token reply stopped after its first tokens has far fewer, and the server exits 0.
        # Neither the cut reply nor the one still waiting may look like a complete one.
        own = Server("--parallel", "1", "--queue", "4")
        stream = chat(own.client(), own.model, stream=True, max_tokens=CTX - 64, extra_body={"ignore_eos": True})
        it = iter(stream)
        n = 0
        for _ in range(3):
            next(it)
            n += 1
        waiting = {}

        def queued():
            body = json.dumps({"messages": [{"role": "user", "content": PROMPT}], "max_tokens": 4}).encode()
            waiting["reply"] = own.raw("POST", "/v1/chat/completions", body)
        waiter = threading.Thread(target=queued)
        waiter.start()
        t0 = time.time()
        while own.metric("whitebox_queue_waiting") < 1:
            assert time.time() - t0 < 10, "the second request did not wait in the queue"
            time.sleep(0.05)
        t0 = time.time()
        own.proc.terminate()
        rc = own.proc.wait(timeout=60)
        elapsed = time.time() - t0
        finished, error = False, ""
        try:
            for chunk in it:
                n += 1
                finished = finished or any(c.finish_reason for c in chunk.choices)
        except Exception as e:  # noqa: BLE001 - an error event (or a closed connection) ends the stream
            error = str(e)
        waiter.join(timeout=30)
        assert rc == 0, f"serve exited with {rc}: {''.join(own.log)}"
        assert n < 100, f"the reply ran on for {n} chunks ({elapsed:.1f} s) after SIGTERM"
        assert not finished, f"the cut reply ended with a finish_reason, as if complete ({error})"
        status, reply = waiting["reply"]
        assert isinstance(reply, dict) and "shutting down" in reply.get("error", {}).get("message", ""), \
            f"the queued request got {status}: {reply}"

    def refuses_open_host_without_key():
        # A name that starts like a loopback address may resolve anywhere: only addresses count.
        for host in ["0.0.0.0", "127.example.com"]:
            out = subprocess.run([CLI, "serve", "--host", host, "--port", "0"], capture_output=True, text=True,
                                 timeout=60)
            assert out.returncode == 1 and "--api-key" in out.stderr and out.stderr.count("\n") == 1, out.stderr
        # Flags the server would otherwise ignore are refused.
        for flags in [["--cache-type-k", "q8_0"], ["--context-policy", "shift"]]:
            out = subprocess.run([CLI, "serve", "--port", "0"] + flags, capture_output=True, text=True, timeout=60)
            assert out.returncode == 1 and flags[0] in out.stderr and out.stderr.count("\n") == 1, \
                out.stderr

    def structured_output():
        # Each way of asking for a schema gives replies that parse and validate, ending where the
        # grammar is complete (finish reason stop, not length).
        fmt = {"type": "json_schema", "json_schema": {"name": "pet", "strict": True, "schema": PET_SCHEMA}}
        prompts = ["Describe a pet as JSON.", "Invent a cat.", "Tell me about a dog named Rex.", "A parrot, please."]
        for i, prompt in enumerate(prompts):
            r = chat(client, srv.model, messages=[{"role": "user", "content": prompt}], response_format=fmt,
                     max_tokens=160, seed=i)
            text = r.choices[0].message.content
            problem = schema_problem(PET_SCHEMA, json.loads(text))
            assert not problem and r.choices[0].finish_reason == "stop", (prompt, text, problem)
        text, _, finish = streamed_text(chat(client, srv.model, stream=True, max_tokens=160,
                                             extra_body={"json_schema": PET_SCHEMA}))
        assert not schema_problem(PET_SCHEMA, json.loads(text)) and finish == "stop", (text, finish)
        r = chat(client, srv.model, messages=[{"role": "user", "content": "Give me a JSON object with a name and an age."}],
                 response_format={"type": "json_object"}, max_tokens=200, temperature=0)
        doc = json.loads(r.choices[0].message.content)
        assert isinstance(doc, dict) and r.choices[0].finish_reason == "stop", r.choices[0]
        r = client.completions.create(model=srv.model, prompt="Is the sky blue? Answer:", max_tokens=4,
                                      extra_body={"grammar": 'root ::= " " ("yes" | "no")'})
        assert r.choices[0].text in (" yes", " no"), r.choices[0].text

    def malformed_constraints_never_reach_a_session():
        before = srv.metric("whitebox_generations_total")
        good = {"model": srv.model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
        cases = [
            ("an undefined rule", dict(good, grammar='root ::= "a" item'), "grammar", "line 1, column"),
            ("a rule that never finishes", dict(good, grammar='root ::= a\na ::= "x" a'), "grammar",
             "rule 'a' can never finish"),
            ("a schema no finite value satisfies",
             dict(good, json_schema={"type": "object", "properties": {"next": {"$ref": "#"}}, "required": ["next"]}),
             "json_schema", "no finite JSON value"),
            ("an unsupported keyword", dict(good, json_schema={"type": "string", "format": "date"}), "json_schema",
             "format"),
            ("grammar and json_schema", dict(good, grammar='root ::= "a"', json_schema={}), "json_schema", "only one"),
            ("response_format and grammar", dict(good, grammar='root ::= "a"', response_format={"type": "json_object"}),
             "grammar", "only one"),
            ("json_schema without a schema", dict(good, response_format={"type": "json_schema", "json_schema": {}}),
             "response_format.json_schema.schema", "required"),
            # Well formed, but no token of the vocabulary begins with a NUL: found against the model's
            # vocabulary before the request is queued, not by a session after the 200.
            ("a grammar no token can begin", dict(good, grammar='root ::= "\\x00" [a-z]+'), "grammar",
             'the grammar cannot begin the reply: it must start with "\\x00"'),
        ]
        for name, body, param, part in cases:
            got, reply = srv.raw("POST", "/v1/chat/completions", json.dumps(body).encode())
            assert got == 400 and reply["error"]["param"] == param and part in reply["error"]["message"] and \
                reply["error"]["type"] == "invalid_request_error", f"{name}: {got} {reply}"
        got, reply = srv.raw("POST", "/v1/completions", json.dumps({"prompt": "x", "grammar": "root ::= (\"a\""}))
        assert got == 400 and reply["error"]["param"] == "grammar" and "column" in reply["error"]["message"], reply
        assert srv.metric("whitebox_generations_total") == before, "a refused request was handed to a session"
        srv.alive()

    try:
        check("models list", models_list)
        check("chat completion: text, usage and logprobs equal generate --json", chat_matches_generate)
        check("seeded requests reproducible, streamed and not", seeded_reproducible_and_streamed)
        check("stop strings", stop_strings)
        check("completions, greedy, logprobs", completions_greedy)
        check("streamed completions: text_offset counts from the reply's start", streamed_completion_offsets)
        check("without a key, other sites' pages and rebound names get 403", keyless_refuses_other_sites)
        check("8 concurrent clients", eight_concurrent_clients)
        check("malformed and hostile requests get 4xx, the server stays up", hostile_requests)
        check("429 when full, a disconnect (streamed or not) frees the session, API key", queue_full_and_disconnect)
        check("a non-loopback host needs --api-key", refuses_open_host_without_key)
        check("SIGTERM cancels the running generation", sigterm_ends_running_generations)
        check("a client that leaves while waiting: abandoned, not a cancelled generation", waiting_client_leaves)
        check("cache_prompt reuses the last request's cache; without it a request starts empty", prompt_cache)
        check("clients that send a request slowly get 408 and free their threads", slow_clients_are_timed_out)
        check("structured output: JSON Schema, json_object and GBNF replies follow them", structured_output)
        check("a malformed grammar or schema is a 400 and never reaches a session",
              malformed_constraints_never_reach_a_session)
        check("the server is still up", srv.alive)
    finally:
        srv.stop()
    if FAILED:
        print(f"{len(FAILED)} check(s) failed: {', '.join(FAILED)}")
        sys.exit(1)
    print("all server checks passed")


if __name__ == "__main__":
    main()
