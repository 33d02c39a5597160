#!/usr/bin/env python3
"""Writes bench/corpus/decode.shapes: the distinct (N, K) weight shapes of decode-time
GEMMs in public models, each line naming every (model, TP, projection) that has it.

    python3 bench/corpus/make_corpus.py           # (re)write decode.shapes next to this file
    python3 bench/corpus/make_corpus.py --check   # exit 1 if the committed file is stale

The model dimensions below are transcribed from each model's published config.json
(Hugging Face): hidden_size, intermediate_size, num_attention_heads,
num_key_value_heads, head_dim, vocab_size, and for MoE / MLA models the expert and
LoRA sizes. What a rank of a tensor-parallel (TP) group multiplies by, as vLLM and
SGLang shard a layer:
  - q / o split by heads; k / v split by KV heads, replicated once TP exceeds them
    (each rank keeps one KV head); fused qkv = q + k + v of one rank;
  - gate / up (and fused gate_up) split along the intermediate size, down along K;
  - MoE experts split like the dense MLP (TP inside each expert; TP 1 is also every
    expert-parallel shape); shared experts likewise; routers replicated (N = experts);
  - DeepSeek MLA: q_a, kv_a (with the rope part) and the fused qkv_a replicated;
    q_b and kv_b split by heads; o split along K;
  - lm_head split along the vocabulary (ceil(vocab / TP) rows).
A (model, TP) is left out where TP does not divide the heads, KV heads (or the
reverse), or an intermediate size, as engines refuse it. Shapes the tgv-gemm API
refuses (K % 8 != 0) are listed in the file's header and left out.

Line format (tgv-bench --shapes): `model-tpN:projection N K [model-tpN:projection ...]`.
"""

import argparse
import os
import sys

TPS = (1, 2, 4, 8)  # the degrees a model's `tps` picks from

# kind "dense": attention + gated MLP; "moe": attention + routed experts (+ shared);
# "mla": DeepSeek-V3 (MLA attention, dense MLP in the first layers, routed + shared experts).
# tps: the TP degrees the model is served at on 80-141 GB GPUs (small models on one or
# two GPUs, 70B-class from 2, the largest at 8); ep: also expert parallel (whole experts
# per GPU, labelled model-ep), for MoE models served without TP 1.


def dense(name, tps, hidden, inter, heads, kv, head_dim, vocab):
    return dict(name=name, kind="dense", tps=tps, hidden=hidden, inter=inter, heads=heads, kv=kv,
                head_dim=head_dim, vocab=vocab)


def moe(name, tps, hidden, heads, kv, head_dim, vocab, experts, expert_inter, ep=False):
    return dict(name=name, kind="moe", tps=tps, hidden=hidden, heads=heads, kv=kv, head_dim=head_dim,
                vocab=vocab, experts=experts, expert_inter=expert_inter, ep=ep)


MODELS = [
    #      name               tps       hidden  inter  heads kv head_dim vocab
    dense("llama3.1-8b",     (1, 2),      4096, 14336,   32,  8, 128, 128256),
    dense("llama3.1-70b",    (2, 4, 8),   8192, 28672,   64,  8, 128, 128256),
    dense("llama3.1-405b",   (8,),       16384, 53248,  128,  8, 128, 128256),
    dense("llama3.2-1b",     (1,),        2048,  8192,   32,  8,  64, 128256),
    dense("llama3.2-3b",     (1,),        3072,  8192,   24,  8, 128, 128256),
    dense("qwen2.5-7b",      (1,),        3584, 18944,   28,  4, 128, 152064),
    dense("qwen2.5-14b",     (1, 2),      5120, 13824,   40,  8, 128, 152064),
    dense("qwen2.5-32b",     (1, 2),      5120, 27648,   40,  8, 128, 152064),
    dense("qwen2.5-72b",     (4, 8),      8192, 29568,   64,  8, 128, 152064),
    dense("qwen3-8b",        (1,),        4096, 12288,   32,  8, 128, 151936),
    dense("qwen3-32b",       (1, 2),      5120, 25600,   64,  8, 128, 151936),
    dense("mistral-7b",      (1,),        4096, 14336,   32,  8, 128, 32768),   # v0.3 vocabulary
    dense("gemma2-9b",       (1,),        3584, 14336,   16,  8, 256, 256000),
    dense("gemma2-27b",      (1, 2),      4608, 36864,   32, 16, 128, 256000),
    dense("gemma3-1b",       (1,),        1152,  6912,    4,  1, 256, 262144),
    dense("gemma3-4b",       (1,),        2560, 10240,    8,  4, 256, 262208),
    dense("gemma3-12b",      (1,),        3840, 15360,   16,  8, 256, 262208),
    dense("gemma3-27b",      (1, 2),      5376, 21504,   32, 16, 128, 262208),
    dense("phi3-mini",       (1,),        3072,  8192,   32, 32,  96, 32064),
    dense("phi3-medium",     (1,),        5120, 17920,   40, 10, 128, 32064),
    dense("phi4",            (1, 2),      5120, 17920,   40, 10, 128, 100352),
    dense("phi4-mini",       (1,),        3072,  8192,   24,  8, 128, 200064),
    #    name               tps           hidden heads kv head_dim vocab  experts expert_inter
    moe("qwen3-30b-a3b",    (1, 2),        2048,  32,  4, 128, 151936, 128,  768),
    moe("qwen3-235b-a22b",  (4, 8),        4096,  64,  4, 128, 151936, 128, 1536, ep=True),
    moe("mixtral-8x7b",     (2, 4),        4096,  32,  8, 128,  32000,   8, 14336, ep=True),
    moe("mixtral-8x22b",    (4, 8),        6144,  48,  8, 128,  32768,   8, 16384, ep=True),
    moe("gpt-oss-20b",      (1,),          2880,  64,  8,  64, 201088,  32, 2880),
    moe("gpt-oss-120b",     (1, 2, 4, 8),  2880,  64,  8,  64, 201088, 128, 2880),
    # DeepSeek-V3 (V3.1 and R1 have the same shapes): MLA, 3 dense layers, 1 shared expert.
    dict(name="deepseek-v3", kind="mla", tps=(8,), ep=True, hidden=7168, inter=18432, heads=128, vocab=129280,
         q_lora=1536, kv_lora=512, qk_nope=128, qk_rope=64, v_head=128,
         experts=256, expert_inter=2048, shared_experts=1),
]


def gqa_attention(m, tp):
    """q, k, v, fused qkv, o of one rank; None where TP cannot split this model."""
    heads, kv, hd, hidden = m["heads"], m["kv"], m["head_dim"], m["hidden"]
    if heads % tp or (kv % tp and tp % kv):
        return None
    q = heads // tp * hd
    kv_rank = max(1, kv // tp) * hd
    return [("q_proj", q, hidden), ("k_proj", kv_rank, hidden), ("v_proj", kv_rank, hidden),
            ("qkv_proj", q + 2 * kv_rank, hidden), ("o_proj", hidden, q)]


def gated_mlp(prefix, inter, hidden, tp):
    if inter % tp:
        return None
    i = inter // tp
    return [(prefix + "gate_proj", i, hidden), (prefix + "up_proj", i, hidden),
            (prefix + "gate_up_proj", 2 * i, hidden), (prefix + "down_proj", hidden, i)]


def mla_attention(m, tp):
    heads, hidden = m["heads"], m["hidden"]
    if heads % tp:
        return None
    h = heads // tp
    kv_a = m["kv_lora"] + m["qk_rope"]
    return [("q_a_proj", m["q_lora"], hidden), ("kv_a_proj_with_mqa", kv_a, hidden),
            ("fused_qkv_a_proj", m["q_lora"] + kv_a, hidden),
            ("q_b_proj", h * (m["qk_nope"] + m["qk_rope"]), m["q_lora"]),
            ("kv_b_proj", h * (m["qk_nope"] + m["v_head"]), m["kv_lora"]),
            ("o_proj", hidden, h * m["v_head"])]


def projections(m, tp):
    """Every (projection, N, K) of one rank of `m` at TP `tp`, or None if TP cannot split it."""
    parts = [mla_attention(m, tp) if m["kind"] == "mla" else gqa_attention(m, tp)]
    if m["kind"] in ("dense", "mla"):
        parts.append(gated_mlp("", m["inter"], m["hidden"], tp))
    if m["kind"] in ("moe", "mla"):
        parts.append(gated_mlp("expert_", m["expert_inter"], m["hidden"], tp))
        if m.get("shared_experts"):
            parts.append(gated_mlp("shared_expert_", m["expert_inter"] * m["shared_experts"], m["hidden"], tp))
        parts.append([("router", m["experts"], m["hidden"])])
    parts.append([("lm_head", -(-m["vocab"] // tp), m["hidden"])])
    if any(p is None for p in parts):
        return None
    return [p for part in parts for p in part]


def corpus():
    """({(N, K): [producer, ...]} in first-seen order, the refused ones the same way, skipped (model, TP)s)."""
    shapes, refused, skipped = {}, {}, []
    def add(label, n, k):
        producers = (shapes if k % 8 == 0 else refused).setdefault((n, k), [])
        if label not in producers:
            producers.append(label)

    for m in MODELS:
        assert set(m["tps"]) <= set(TPS), m["name"]
        for tp in m["tps"]:
            projs = projections(m, tp)
            if projs is None:
                skipped.append("%s-tp%d" % (m["name"], tp))
                continue
            for proj, n, k in projs:
                add("%s-tp%d:%s" % (m["name"], tp, proj), n, k)
        if m.get("ep"):
            for proj, n, k in gated_mlp("expert_", m["expert_inter"], m["hidden"], 1):
                add("%s-ep:%s" % (m["name"], proj), n, k)
    return shapes, refused, skipped


def render():
    shapes, refused, skipped = corpus()
    out = ["# tgv-gemm decode shape corpus: %d distinct weight shapes (N x K) of %d models at TP %s (and EP)."
           % (len(shapes), len(MODELS), "/".join(map(str, TPS))),
           "# Generated by bench/corpus/make_corpus.py (the model configs and sharding rules are there):",
           "# do not edit, run it again. Format (tgv-bench --shapes): `model-tpN:projection N K [producer ...]`,",
           "# the first producer names the line, the rest share its N x K. Sorted by weight size.",
           "# (model, TP)s left out (TP does not divide heads / KV heads / an intermediate size): "
           + (" ".join(skipped) if skipped else "none"),
           "# shapes left out because the API refuses K % 8 != 0: "
           + ("; ".join("%dx%d (%s)" % (n, k, " ".join(p)) for (n, k), p in refused.items()) if refused else "none")]
    for (n, k), producers in sorted(shapes.items(), key=lambda item: (item[0][0] * item[0][1], item[0])):
        out.append("%s %d %d%s" % (producers[0], n, k, "".join(" " + p for p in producers[1:])))
    return "\n".join(out) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed file differs from the output")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "decode.shapes"))
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        try:
            with open(args.out) as f:
                current = f.read()
        except OSError as e:
            print("make_corpus.py --check: cannot read %s: %s" % (args.out, e), file=sys.stderr)
            return 1
        if current != text:
            print("make_corpus.py --check: %s is stale: run bench/corpus/make_corpus.py and commit it" % args.out,
                  file=sys.stderr)
            return 1
        print("make_corpus.py --check: %s is up to date (%d shapes)" % (args.out, len(corpus()[0])))
        return 0
    with open(args.out, "w") as f:
        f.write(text)
    print("wrote %s" % args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
