#!/usr/bin/env python3
"""Write a small llama-shaped GGUF (metadata, tokenizer keys, tensor table and
zero-filled data) for the ledger and manifest tests. Not a runnable model:
the tensor bytes are zeros. Options change one field so tests can build
variants: --vocab-extra adds a token (tokenizer hash changes), --type picks
the weight type, --truncate cuts the file."""
import argparse
import struct

TYPES = {"F32": (0, 1, 4), "F16": (1, 1, 2), "Q4_0": (2, 32, 18),
         "Q8_0": (8, 32, 34), "Q4_K": (12, 256, 144), "Q6_K": (14, 256, 210)}


def s(x):
    b = x.encode()
    return struct.pack("<Q", len(b)) + b


def kv_u32(k, v):
    return s(k) + struct.pack("<II", 4, v)


def kv_f32(k, v):
    return s(k) + struct.pack("<If", 6, v)


def kv_str(k, v):
    return s(k) + struct.pack("<I", 8) + s(v)


def kv_strs(k, vs):
    return s(k) + struct.pack("<IIQ", 9, 8, len(vs)) + b"".join(s(v) for v in vs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--type", default="Q8_0")
    ap.add_argument("--embd", type=int, default=256)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=4)
    ap.add_argument("--ff", type=int, default=512)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--ctx", type=int, default=2048)
    ap.add_argument("--vocab-extra", action="store_true")
    ap.add_argument("--name", default="edgeq-test")
    ap.add_argument("--truncate", type=int, default=0)
    ap.add_argument("--drop", default="", help="leave this tensor out")
    a = ap.parse_args()

    tokens = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % i for i in range(a.vocab - 3)]
    if a.vocab_extra:
        tokens[-1] = "extra"
    kvs = [kv_str("general.architecture", "llama"),
           kv_str("general.name", a.name),
           kv_u32("llama.block_count", a.layers),
           kv_u32("llama.embedding_length", a.embd),
           kv_u32("llama.feed_forward_length", a.ff),
           kv_u32("llama.attention.head_count", a.heads),
           kv_u32("llama.attention.head_count_kv", a.kv_heads),
           kv_u32("llama.context_length", a.ctx),
           kv_f32("llama.attention.layer_norm_rms_epsilon", 1e-5),
           kv_str("tokenizer.ggml.model", "llama"),
           kv_strs("tokenizer.ggml.tokens", tokens),
           kv_u32("general.alignment", 32)]
    hd = a.embd // a.heads
    wt = a.type
    tensors = [("token_embd.weight", [a.embd, a.vocab], wt),
               ("output_norm.weight", [a.embd], "F32"),
               ("output.weight", [a.embd, a.vocab], wt)]
    for i in range(a.layers):
        p = "blk.%d." % i
        tensors += [(p + "attn_norm.weight", [a.embd], "F32"),
                    (p + "attn_q.weight", [a.embd, a.embd], wt),
                    (p + "attn_k.weight", [a.embd, a.kv_heads * hd], wt),
                    (p + "attn_v.weight", [a.embd, a.kv_heads * hd], wt),
                    (p + "attn_output.weight", [a.embd, a.embd], wt),
                    (p + "ffn_norm.weight", [a.embd], "F32"),
                    (p + "ffn_gate.weight", [a.embd, a.ff], wt),
                    (p + "ffn_up.weight", [a.embd, a.ff], wt),
                    (p + "ffn_down.weight", [a.ff, a.embd], wt)]
    tensors = [t for t in tensors if t[0] != a.drop]
    info = b""
    off = 0
    for name, dims, t in tensors:
        tid, blck, size = TYPES[t]
        n = 1
        for d in dims:
            n *= d
        nbytes = n // blck * size
        info += s(name) + struct.pack("<I", len(dims)) + b"".join(
            struct.pack("<Q", d) for d in dims) + struct.pack("<IQ", tid, off)
        off += (nbytes + 31) // 32 * 32
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs) + info
    head += b"\0" * ((32 - len(head) % 32) % 32)
    data = head + b"\0" * off
    if a.truncate:
        data = data[:a.truncate]
    with open(a.out, "wb") as f:
        f.write(data)


if __name__ == "__main__":
    main()
