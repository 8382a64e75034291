"""The KServe v2 infer body as numpy arrays, the client's side: a request's JSON header with
JSON tensors or Triton's binary-tensor extension (raw bytes after the header, whose length is
the Inference-Header-Content-Length header), and a response read back either way. Used by
compare.py and python/tests/test_serve.py; peer_server.py takes its datatype table."""
import json

import numpy as np

DATATYPES = {"BOOL": np.bool_, "UINT8": np.uint8, "INT8": np.int8, "INT16": np.int16, "INT32": np.int32,
             "INT64": np.int64, "FP16": np.float16, "FP32": np.float32, "FP64": np.float64}
HEADER_LENGTH = "Inference-Header-Content-Length"


def encode_request(inputs, binary):
    """{name: array} -> (body, headers); `binary` also asks for binary outputs."""
    header = {"inputs": [], "parameters": {"binary_data_output": binary}}
    blobs = []
    for name, a in inputs.items():
        kind = next(k for k, v in DATATYPES.items() if v == a.dtype.type)
        t = {"name": name, "datatype": kind, "shape": list(a.shape)}
        if binary:
            blobs.append(a.tobytes())
            t["parameters"] = {"binary_data_size": len(blobs[-1])}
        else:
            t["data"] = a.reshape(-1).tolist()
        header["inputs"].append(t)
    head = json.dumps(header).encode()
    if not binary:
        return head, {"Content-Type": "application/json"}
    return head + b"".join(blobs), {"Content-Type": "application/octet-stream", HEADER_LENGTH: str(len(head))}


def decode_response(headers, body):
    """A 200 answer's outputs, {name: array}; `headers` maps names to values, any case."""
    lower = {k.lower(): v for k, v in headers.items()}
    length = int(lower.get(HEADER_LENGTH.lower(), len(body)))
    out, offset = {}, length
    for t in json.loads(body[:length])["outputs"]:
        size = (t.get("parameters") or {}).get("binary_data_size")
        if size is None:
            a = np.array(t["data"], DATATYPES[t["datatype"]])
        else:
            a = np.frombuffer(body[offset:offset + size], DATATYPES[t["datatype"]])
            offset += size
        out[t["name"]] = a.reshape(t["shape"])
    return out
