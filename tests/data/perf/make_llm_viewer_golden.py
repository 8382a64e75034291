"""Writes llm-viewer-decode.golden.json: LLM-Viewer's decode-stage operation counts for the ops
whose conventions agree with keel's, transcribed from hahnyuan/LLM-Viewer model_analyzer.py
(ModelAnalyzer.analyze, decode) and configs/Llama.py (get_linear_layers) at commit 01b269d6.

    /usr/bin/python3 tests/data/perf/make_llm_viewer_golden.py
"""
import json
import os

SOURCE = ("LLM-Viewer, hahnyuan/LLM-Viewer model_analyzer.py (ModelAnalyzer.analyze, decode stage) "
          "and configs/Llama.py (get_linear_layers), https://github.com/hahnyuan/LLM-Viewer/blob/"
          "01b269d600a36f674fd0e7952763f1560f39d368/model_analyzer.py")


def viewer(h, i, H, kv, L, B, s):
    d = h // H
    lin = {"q_proj": (h, h), "k_proj": (h, h * kv / H), "v_proj": (h, h * kv / H),
           "out_proj": (h, h), "gate_proj": (h, i), "up_proj": (h, i), "down_proj": (i, h)}
    ops = sum(ic * oc * B * 2 for ic, oc in lin.values())
    ops += 2 * (s * d * H * B * 2)  # qk_matmul + sv_matmul
    ops += B * H * s * 5            # softmax
    ops += 2 * (B * h * 7)          # attn_norm, mlp_norm
    ops += 2 * (B * h)              # attn_add, mlp_add
    return ops * L


CASES = [("llama-2-7b", 4096, 11008, 32, 32, 32, 1, 1024),
         ("llama-3-8b", 4096, 14336, 32, 8, 32, 8, 4096),
         ("mistral-7b", 4096, 14336, 32, 8, 32, 4, 2048)]


def main():
    out = {"source": SOURCE,
           "ops": "q_proj, k_proj, v_proj, out_proj (keel: o_proj), gate_proj, up_proj, down_proj, "
                  "qk_matmul, sv_matmul, softmax, attn_norm, mlp_norm, attn_add, mlp_add (keel: "
                  "attn_residual, mlp_residual); times num_hidden_layers",
           "differs": "mlp_act is charged 2 x hidden_size per token by LLM-Viewer and 3 x "
                      "intermediate_size by keel (SiLU + gate product over the MLP width); "
                      "LLM-Viewer's decode has no embedding, final norm or LM head in this version",
           "cases": [{"config": n, "batch": B, "seq": s, "decode_layer_ops": viewer(h, i, H, kv, L, B, s)}
                     for n, h, i, H, kv, L, B, s in CASES]}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "llm-viewer-decode.golden.json")
    with open(path, "w") as f:
        f.write(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
