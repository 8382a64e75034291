#!/usr/bin/env python3
"""The two peer servers keel serve is benchmarked against (bench/serve/compare.py): plain Python
serving of the same TorchScript files, speaking enough of the KServe v2 HTTP/REST protocol for
`keel serve bench` and wrk:

  GET  /v2/health/ready, /v2/health/live, /v2/models/NAME/ready     200
  GET  /v2/models/NAME          metadata from REPO/NAME/config.pbtxt (batch dim shown as -1)
  GET  /v2/models/NAME/config   its name, max_batch_size, input and output in Triton's JSON form
  POST /v2/models/NAME/infer    JSON tensors and Triton's binary-tensor extension (the
                                Inference-Header-Content-Length header), both directions
  GET  /v2/models/NAME/stats    404 (no statistics extension)

  --mode sequential   peer (a): http.server.HTTPServer, one request at a time in one process,
                      torch's default thread count. Connections close after each response
                      (HTTP/1.0): a single-threaded server cannot hold 16 keep-alive clients.
  --mode threaded     peer (b), the forum recipe: a Flask app (threaded=True), one worker
                      thread per model with its own queue, request threads hand their request
                      to the model's worker and wait, torch.set_num_threads(cpus // models).

Neither batches. Each model runs twice on zeros at start (as the demo configs' warmup does).
Ensembles are not served. On start it prints "listening on http://HOST:PORT" and flushes.

Usage: /usr/bin/python3 bench/serve/peer_server.py --repo REPO --models resnet18,bert,gpt2
           --mode sequential|threaded [--port 0] [--host 127.0.0.1]
"""
import argparse
import concurrent.futures
import http.server
import json
import os
import queue
import re
import sys
import threading

import numpy as np
import torch

from kserve import DATATYPES as DTYPES


class BadRequest(Exception):
    pass


# ---------------------------------------------------------------- config.pbtxt, tolerantly


def parse_pbtxt(text):
    """Protobuf text format as nested dicts; a field seen twice becomes a list."""
    tokens = re.findall(r'"(?:[^"\\]|\\.)*"|[{}\[\]<>:,;]|[^\s{}\[\]<>:,;"]+', re.sub(r"#[^\n]*", "", text))
    pos = 0

    def value():
        nonlocal pos
        tok = tokens[pos]
        pos += 1
        if tok in "{<":
            return message("}>")
        if tok == "[":
            items = []
            while tokens[pos] != "]":
                if tokens[pos] != ",":
                    items.append(value())
                else:
                    pos += 1
            pos += 1
            return items
        if tok.startswith('"'):
            return tok[1:-1]
        try:
            return int(tok)
        except ValueError:
            return tok

    def message(end):
        nonlocal pos
        fields = {}
        while pos < len(tokens) and tokens[pos] not in end:
            key = tokens[pos]
            pos += 1
            if tokens[pos] == ":":
                pos += 1
            v = value()
            values = v if isinstance(v, list) else [v]
            fields.setdefault(key, []).extend(values)
            while pos < len(tokens) and tokens[pos] in ",;":
                pos += 1
        pos += 1
        lists = ("input", "output", "dims")  # repeated even when written once
        return {k: (v[0] if len(v) == 1 and k not in lists else v) for k, v in fields.items()}

    return message("")


class Model:
    def __init__(self, repo, name):
        cfg = parse_pbtxt(open(os.path.join(repo, name, "config.pbtxt")).read())
        self.name = name
        self.max_batch = int(cfg.get("max_batch_size", 0))
        specs = lambda ts: [(t["name"], t["data_type"][len("TYPE_"):], [int(d) for d in t.get("dims", [])]) for t in ts]
        self.inputs, self.outputs = specs(cfg["input"]), specs(cfg["output"])
        self.module = torch.jit.load(os.path.join(repo, name, "1", "model.pt")).eval()
        args = [a.name for a in self.module.forward.schema.arguments[1:]]
        self.slots = bind([n for n, _, _ in self.inputs], args)

    def metadata(self):
        batch = [-1] if self.max_batch > 0 else []
        tensors = lambda specs: [{"name": n, "datatype": t, "shape": batch + d} for n, t, d in specs]
        return {"name": self.name, "versions": ["1"], "platform": "pytorch_libtorch",
                "inputs": tensors(self.inputs), "outputs": tensors(self.outputs)}

    def config(self):  # Triton's JSON form of the fields read
        tensors = lambda specs: [{"name": n, "data_type": "TYPE_" + t, "dims": d} for n, t, d in specs]
        return {"name": self.name, "platform": "pytorch_libtorch", "max_batch_size": self.max_batch,
                "input": tensors(self.inputs), "output": tensors(self.outputs)}

    def run(self, arrays):
        """Inputs in config order (numpy) -> outputs in config order (numpy)."""
        args = [None] * len(arrays)
        for slot, a in zip(self.slots, arrays):
            args[slot] = torch.from_numpy(a)
        with torch.inference_mode():
            result = self.module(*args)
        if isinstance(result, dict):
            names, got = list(result.keys()), list(result.values())
        else:
            names, got = [], list(result) if isinstance(result, (tuple, list)) else [result]
        slots = bind([n for n, _, _ in self.outputs], names)
        return [got[s].contiguous().numpy() for s in slots]

    def warm(self):
        zeros = [np.zeros([1] * (self.max_batch > 0) + [8 if d < 0 else d for d in dims], DTYPES[t])
                 for _, t, dims in self.inputs]
        for _ in range(2):
            self.run(zeros)


def bind(specs, names):
    """keel's binding: by name when every spec is a name, else by NAME__i, else in order."""
    if names and all(s in names for s in specs):
        return [names.index(s) for s in specs]
    conv = [re.fullmatch(r".*__(\d{1,4})", s) for s in specs]
    if all(conv):
        return [int(m.group(1)) for m in conv]
    return list(range(len(specs)))


# ---------------------------------------------------------------- the protocol


def infer(model, body, header_length, run):
    """POST /v2/models/NAME/infer -> (headers, body); `run` executes the model."""
    head = body[:header_length] if header_length is not None else body
    try:
        req = json.loads(head)
    except ValueError as e:
        raise BadRequest(f"the request is not JSON: {e}")
    given = {t.get("name"): t for t in req.get("inputs", [])}
    offset, arrays = header_length or 0, []
    for name, dtype, dims in model.inputs:
        t = given.get(name)
        if t is None:
            raise BadRequest(f"input '{name}' is missing")
        shape = [int(d) for d in t.get("shape", [])]
        want = ([-1] if model.max_batch > 0 else []) + dims
        fits = len(shape) == len(want) and all(w in (-1, s) for w, s in zip(want, shape))
        if t.get("datatype") != dtype or not fits:
            raise BadRequest(f"input '{name}': expected {dtype} {want}, got {t.get('datatype')} {shape}")
        if model.max_batch > 0 and not 1 <= shape[0] <= model.max_batch:
            raise BadRequest(f"input '{name}': batch {shape[0]} outside 1..{model.max_batch}")
        size = (t.get("parameters") or {}).get("binary_data_size")
        try:
            if size is not None:
                chunk = body[offset:offset + size]
                offset += size
                a = np.frombuffer(bytearray(chunk), DTYPES[dtype]).reshape(shape)
            else:
                a = np.array(t["data"], DTYPES[dtype]).reshape(shape)
        except (KeyError, ValueError) as e:
            raise BadRequest(f"input '{name}': {e}")
        arrays.append(a)
    results = run(arrays)
    binary_all = bool((req.get("parameters") or {}).get("binary_data_output"))
    asked = {o["name"]: bool((o.get("parameters") or {}).get("binary_data", binary_all))
             for o in req.get("outputs", [])} or {n: binary_all for n, _, _ in model.outputs}
    outputs, blobs = [], []
    for (name, dtype, _), a in zip(model.outputs, results):
        if name not in asked:
            continue
        out = {"name": name, "datatype": dtype, "shape": list(a.shape)}
        if asked[name]:
            blob = a.astype(DTYPES[dtype], copy=False).tobytes()
            out["parameters"] = {"binary_data_size": len(blob)}
            blobs.append(blob)
        else:
            out["data"] = a.reshape(-1).tolist()
        outputs.append(out)
    header = {"model_name": model.name, "model_version": "1", "outputs": outputs}
    if "id" in req:
        header["id"] = req["id"]
    text = json.dumps(header, separators=(",", ":")).encode()
    if not blobs:
        return {"Content-Type": "application/json"}, text
    return ({"Content-Type": "application/octet-stream", "Inference-Header-Content-Length": str(len(text))},
            text + b"".join(blobs))


def handle(models, run, method, path, headers, body):
    """One request -> (status, headers, body)."""
    as_json = lambda status, obj: (status, {"Content-Type": "application/json"}, json.dumps(obj).encode())
    parts = path.split("?")[0].strip("/").split("/")
    if method == "GET" and parts in (["v2", "health", "ready"], ["v2", "health", "live"]):
        return 200, {}, b""
    if method == "GET" and parts == ["v2"]:
        return as_json(200, {"name": "peer", "version": "1", "extensions": ["binary_tensor_data"]})
    if len(parts) < 3 or parts[:2] != ["v2", "models"] or parts[2] not in models:
        return as_json(404, {"error": f"no such model or endpoint: {path}"})
    model, rest = models[parts[2]], parts[3:]
    if rest[:2] == ["versions", "1"]:
        rest = rest[2:]
    if method == "GET" and rest == []:
        return as_json(200, model.metadata())
    if method == "GET" and rest == ["config"]:
        return as_json(200, model.config())
    if method == "GET" and rest == ["ready"]:
        return 200, {}, b""
    if method == "POST" and rest == ["infer"]:
        length = headers.get("Inference-Header-Content-Length")
        try:
            out_headers, out = infer(model, body, int(length) if length is not None else None,
                                     lambda arrays: run(model, arrays))
            return 200, out_headers, out
        except BadRequest as e:
            return as_json(400, {"error": str(e)})
        except Exception as e:  # the model failed
            return as_json(500, {"error": str(e).splitlines()[0] if str(e) else type(e).__name__})
    return as_json(404, {"error": f"not served here: {method} {path}"})


# ---------------------------------------------------------------- peer (a): sequential


def serve_sequential(models, host, port):
    run = lambda model, arrays: model.run(arrays)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def respond(self, method):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            status, headers, out = handle(models, run, method, self.path, self.headers, body)
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(out)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(out)

        def do_GET(self):
            self.respond("GET")

        def do_POST(self):
            self.respond("POST")

        def log_message(self, *args):
            pass

    class Server(http.server.HTTPServer):
        request_queue_size = 128  # 16 clients reconnecting at once: no SYN drops

    server = Server((host, port), Handler)
    return server, server.server_address[1]


# ---------------------------------------------------------------- peer (b): Flask, a worker per model


def serve_threaded(models, host, port):
    import logging

    import flask
    from werkzeug.serving import make_server

    torch.set_num_threads(max(1, (os.cpu_count() or 1) // len(models)))
    queues = {}
    for name, model in models.items():
        q = queues[name] = queue.Queue()

        def work(model=model, q=q):
            while True:
                arrays, future = q.get()
                try:
                    future.set_result(model.run(arrays))
                except Exception as e:
                    future.set_exception(e)

        threading.Thread(target=work, daemon=True, name=f"worker-{name}").start()

    def run(model, arrays):
        future = concurrent.futures.Future()
        queues[model.name].put((arrays, future))
        return future.result()

    app = flask.Flask("peer")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)

    @app.route("/", defaults={"path": ""}, methods=["GET", "POST"])
    @app.route("/<path:path>", methods=["GET", "POST"])
    def any_path(path):
        r = flask.request
        status, headers, out = handle(models, run, r.method, "/" + path, r.headers, r.get_data())
        return flask.Response(out, status=status, headers=headers)

    server = make_server(host, port, app, threaded=True)
    return server, server.server_port


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", required=True)
    ap.add_argument("--models", required=True, help="comma-separated model names (not ensembles)")
    ap.add_argument("--mode", choices=["sequential", "threaded"], required=True)
    ap.add_argument("--port", type=int, default=0, help="0: a free port")
    ap.add_argument("--host", default="127.0.0.1")
    args = ap.parse_args()
    models = {n: Model(args.repo, n) for n in args.models.split(",") if n}
    for m in models.values():
        m.warm()
    serve = serve_sequential if args.mode == "sequential" else serve_threaded
    server, port = serve(models, args.host, args.port)
    print(f"listening on http://{args.host}:{port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
