"""keel serve end to end on the demo repository (scripts/make-serve-demo.py): every response
equals the TorchScript model run directly on the same input, whether keel batched the request
with others or not; bad requests get the protocol's error and a 4xx; a corrupt model fails
alone; SIGTERM drains what is in flight."""

import concurrent.futures
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import time
import zlib

import numpy as np
import pytest

from conftest import SOURCE

sys.path.insert(0, str(SOURCE / "bench" / "serve"))
import kserve  # noqa: E402  (the client side of the protocol, shared with bench/serve/compare.py)

torch = pytest.importorskip("torch")

# Per model: (rtol, atol) of keel's answer against the model run alone in this process. The
# copies and the integer/softmax heads are exact; convolutions and GEMMs over a batch of
# requests may sum in another order than over one request.
TOLERANCE = {"identity": (0, 0), "preprocess": (0, 0), "topk": (1e-6, 1e-7),
             "resnet18": (1e-4, 1e-4), "gpt2": (1e-4, 1e-4), "bert": (1e-4, 1e-4),
             "classify": (1e-4, 1e-5)}


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    out = tmp_path_factory.mktemp("serve") / "repo"
    subprocess.run([sys.executable, str(SOURCE / "scripts" / "make-serve-demo.py"), str(out)],
                   check=True, stdout=subprocess.DEVNULL)
    return out


class Server:
    """`keel serve REPO --http 0`, its port read from the line it prints when it listens."""

    def __init__(self, exe, repo, *args):
        self.proc = subprocess.Popen([exe, "serve", str(repo), "--http", "0", *args],
                                     stderr=subprocess.PIPE, text=True)
        self.log = []
        for line in self.proc.stderr:
            self.log.append(line)
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                return
        raise AssertionError("keel serve did not start: " + "".join(self.log))

    def request(self, method, path, body=None, headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            conn.close()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        rest = self.proc.communicate(timeout=120)[1]
        return self.proc.returncode, "".join(self.log) + rest


@pytest.fixture(scope="module")
def server(keel_exe, repo):
    s = Server(keel_exe, repo, "--max-body", "16MiB")
    yield s
    rc, log = s.stop()
    assert rc == 0, log


def infer(server, model, inputs, binary):
    """inputs: {name: array} -> (status, {name: array} or the error text)."""
    body, headers = kserve.encode_request(inputs, binary)
    status, response_headers, answer = server.request("POST", f"/v2/models/{model}/infer", body, headers)
    if status != 200:
        return status, json.loads(answer)["error"]
    return status, kserve.decode_response(response_headers, answer)


def direct(server, repo, model):
    """The model run in this process, as a function of {name: array} -> {name: array}; its
    tensor names and their order as keel's metadata says."""
    if model == "classify":
        pre, net, top = (direct(server, repo, m) for m in ("preprocess", "resnet18", "topk"))
        return lambda x: top({"LOGITS": net({"INPUT__0": pre({"IMAGE": x["IMAGE"]})["PIXELS"]})
                              ["OUTPUT__0"]})
    meta = json.loads(server.request("GET", f"/v2/models/{model}")[2])
    inputs = [t["name"] for t in meta["inputs"]]
    outputs = [t["name"] for t in meta["outputs"]]
    module = torch.jit.load(str(repo / model / "1" / "model.pt"))

    def run(x):
        with torch.inference_mode():
            got = module(*(torch.from_numpy(x[n].copy()) for n in inputs))
        if isinstance(got, dict):
            return {k: v.numpy() for k, v in got.items()}
        got = got if isinstance(got, (tuple, list)) else (got,)
        return {n: v.numpy() for n, v in zip(outputs, got)}
    return run


def sample(model, rows, rng):
    if model in ("preprocess", "classify"):
        return {"IMAGE": rng.integers(0, 256, (rows, 224, 224, 3)).astype(np.uint8)}
    if model == "resnet18":
        return {"INPUT__0": rng.standard_normal((rows, 3, 224, 224)).astype(np.float32)}
    if model == "bert":
        return {"input_ids": rng.integers(0, 30522, (rows, 128)),
                "attention_mask": (rng.random((rows, 128)) < 0.9).astype(np.int64)}
    if model == "gpt2":
        return {"input_ids": rng.integers(0, 50257, (rows, 7))}
    if model == "topk":
        return {"LOGITS": rng.standard_normal((rows, 1000)).astype(np.float32)}
    return {"INPUT0": rng.standard_normal((rows, 16)).astype(np.float32)}


@pytest.mark.parametrize("model", ["identity", "preprocess", "topk", "resnet18", "gpt2", "bert",
                                   "classify"])
def test_every_response_equals_the_model_run_directly(server, repo, model):
    rng = np.random.default_rng(zlib.crc32(model.encode()))
    # Concurrent requests (keel batches them), of one and of two rows, JSON and binary.
    count = 4 if model == "bert" else 12
    requests = [sample(model, 1 + (i % 3 == 2), rng) for i in range(count)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda ix: infer(server, model, ix[1], ix[0] % 2 == 1),
                                enumerate(requests)))
    run = direct(server, repo, model)
    rtol, atol = TOLERANCE[model]
    for x, (status, got) in zip(requests, answers):
        assert status == 200, got
        want = run(x)
        assert set(got) == set(want)
        for name in want:
            assert got[name].shape == want[name].shape, name
            np.testing.assert_allclose(got[name], want[name], rtol=rtol, atol=atol, err_msg=name)


def test_bad_requests_get_the_protocols_error(server):
    body = lambda shape, kind, data: json.dumps(
        {"inputs": [{"name": "INPUT0", "shape": shape, "datatype": kind, "data": data}]})
    cases = [
        ("/v2/models/identity/infer", "{malformed", 400),
        ("/v2/models/identity/infer", body([1, 15], "FP32", [0.5] * 15), 400),
        ("/v2/models/identity/infer", body([1, 16], "INT64", [1] * 16), 400),
        ("/v2/models/identity/infer", body([1, 16], "FP32", [0.5] * 3), 400),
        ("/v2/models/nobody/infer", body([1, 16], "FP32", [0.5] * 16), 404),
        ("/v2/models/identity/versions/7/infer", body([1, 16], "FP32", [0.5] * 16), 404),
        ("/v2/models/identity/infer", "[" + "1," * (9 << 20) + "1]", 413),
    ]
    for path, text, want in cases:
        status, headers, answer = server.request("POST", path, text.encode(),
                                                 {"Content-Type": "application/json"})
        assert status == want, (path, text[:60], answer[:200])
        assert "error" in json.loads(answer)
    assert server.request("GET", "/v2/health/live")[0] == 200


def test_a_corrupt_model_fails_its_own_load_only(keel_exe, repo, tmp_path):
    for name in ("identity", "broken"):
        (tmp_path / name / "1").mkdir(parents=True)
        config = (repo / "identity" / "config.pbtxt").read_text()
        (tmp_path / name / "config.pbtxt").write_text(config.replace('"identity"', f'"{name}"'))
    (tmp_path / "identity" / "1" / "model.pt").write_bytes(
        (repo / "identity" / "1" / "model.pt").read_bytes())
    (tmp_path / "broken" / "1" / "model.pt").write_bytes(b"PK\x03\x04 not a TorchScript archive")
    s = Server(keel_exe, tmp_path)
    try:
        assert "broken UNAVAILABLE" in "".join(s.log)
        status, _, index = s.request("POST", "/v2/repository/index")
        states = {m["name"]: m for m in json.loads(index)}
        assert status == 200 and states["identity"]["state"] == "READY"
        assert states["broken"]["state"] == "UNAVAILABLE"
        assert "not a TorchScript model" in states["broken"]["reason"]
        x = sample("identity", 1, np.random.default_rng(1))
        assert infer(s, "identity", x, True)[0] == 200
        assert infer(s, "broken", x, True)[0] == 503  # known, but unavailable
        assert infer(s, "nobody", x, True)[0] == 404
    finally:
        rc, log = s.stop()
    assert rc == 0, log


def test_sigterm_answers_requests_in_flight(keel_exe, repo):
    s = Server(keel_exe, repo)
    x = sample("bert", 1, np.random.default_rng(2))
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        pending = [pool.submit(infer, s, "bert", x, True) for _ in range(2)]
        time.sleep(0.3)  # both sent; each BERT run takes longer than this
        rc, log = s.stop()
        statuses = [p.result()[0] for p in pending]
    assert rc == 0, log
    assert statuses == [200, 200], log
    assert "stopped" in log
