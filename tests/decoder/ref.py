#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
Independent reference for edgeq's forward pass: its own GGUF parser and
dequantizers written from the format description (ggml-common.h block
layouts), and a float64 numpy implementation of the llama/qwen2/qwen3/gemma2/gemma3/phi3 forward pass.
It shares no code with edgeq.

  ref.py logits MODEL TOKENS        print the logits of every position (JSON)
  ref.py compare MODEL DUMP JSON TOL
        DUMP: float32 rows written by `edgeq run --dump-logits` (row 0: the
        logits after the prompt, row k: after generated token k); JSON: the
        line `edgeq run --dump-logits` printed (prompt_tokens, tokens).
        Passes when every row's max |edgeq - ref| <= TOL * max(1, max|ref|)
        and edgeq's greedy choice is the reference's wherever the reference's
        top-2 margin exceeds 2 * TOL * max(1, max|ref|).
"""
import json
import os
import struct
import sys

import numpy as np

GGUF_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f",
               7: "<?", 10: "<Q", 11: "<q", 12: "<d"}

# type id: (block elements, block bytes)
TYPES = {0: (1, 4), 1: (1, 2), 30: (1, 2), 8: (32, 34), 2: (32, 18),
         12: (256, 144), 14: (256, 210), 3: (32, 20), 6: (32, 22),
         7: (32, 24), 20: (32, 18), 10: (256, 84), 11: (256, 110),
         13: (256, 176), 23: (256, 136)}

# ggml's kvalues_iq4nl: the 16 values of IQ4_NL and IQ4_XS
IQ4 = np.array([-127, -104, -83, -65, -49, -35, -22, -10,
                1, 13, 25, 38, 53, 69, 89, 113], dtype=np.float64)


def k4_scales(s):
    # the 8 six-bit scales and mins of Q4_K/Q5_K from their 12 bytes
    s = s.astype(np.int64)
    sc = np.zeros((s.shape[0], 8))
    mn = np.zeros((s.shape[0], 8))
    for j in range(8):
        if j < 4:
            sc[:, j] = s[:, j] & 63
            mn[:, j] = s[:, j + 4] & 63
        else:
            sc[:, j] = (s[:, j + 4] & 15) | ((s[:, j - 4] >> 6) << 4)
            mn[:, j] = (s[:, j + 4] >> 4) | ((s[:, j] >> 6) << 4)
    return sc, mn


def nibbles(qs):
    # 16 bytes per row -> 32 values: low nibbles first
    return np.concatenate([qs & 15, qs >> 4], axis=1).astype(np.int64)


def q5_values(qs, qh4):
    # Q5_0/Q5_1: element e has bit e of the little-endian word qh as bit 4
    qh = qh4.copy().view("<u4").astype(np.int64).reshape(-1, 1)
    bits = (qh >> np.arange(32)) & 1
    return nibbles(qs) | (bits << 4)


# Q2_K/Q3_K element e = 128 n + 32 j + 16 h + l: bits 2j of byte
# 32 n + 16 h + l of qs, sub-block e // 16; Q3_K's high bit is bit 4n + j
# of hmask byte 16 h + l
_E = np.arange(256)
_N, _J, _HL = _E // 128, (_E % 128) // 32, _E % 32
K2_BYTE, K2_SHIFT, K2_HBIT = 32 * _N + _HL, 2 * _J, 4 * _N + _J


def q3_scales(s):
    s = s.astype(np.int64)
    g = np.arange(16)
    low = np.where(g < 8, s[:, g % 8] & 15, s[:, g % 8] >> 4)
    high = (s[:, 8 + g % 4] >> (2 * (g // 4))) & 3
    return (low | (high << 4)) - 32


class Reader:
    def __init__(self, path):
        self.b = open(path, "rb").read()
        self.p = 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.b, self.p)
        self.p += struct.calcsize(fmt)
        return v[0]

    def string(self):
        n = self.take("<Q")
        s = self.b[self.p:self.p + n]
        self.p += n
        return s.decode("utf-8", "replace")

    def value(self, t):
        if t == 8:
            return self.string()
        if t == 9:
            at = self.take("<I")
            n = self.take("<Q")
            return [self.value(at) for _ in range(n)]
        return self.take(GGUF_SCALAR[t])


def load_gguf(path):
    r = Reader(path)
    assert r.b[:4] == b"GGUF", "not a GGUF file"
    r.p = 4
    version = r.take("<I")
    assert version in (2, 3)
    n_t = r.take("<Q")
    n_kv = r.take("<Q")
    meta = {}
    for _ in range(n_kv):
        k = r.string()
        t = r.take("<I")
        meta[k] = r.value(t)
    infos = []
    for _ in range(n_t):
        name = r.string()
        nd = r.take("<I")
        ne = [r.take("<Q") for _ in range(nd)]
        t = r.take("<I")
        off = r.take("<Q")
        infos.append((name, ne, t, off))
    align = meta.get("general.alignment", 32)
    data = (r.p + align - 1) // align * align
    tensors = {}
    for name, ne, t, off in infos:
        tensors[name] = (ne, t, data + off)
    return r.b, meta, tensors


def f16(u16):
    return u16.view(np.float16).astype(np.float64).reshape(-1)


def dequant(buf, ne, t, off):
    n = int(np.prod(ne))
    blk, bsz = TYPES[t]
    nbytes = n // blk * bsz
    raw = np.frombuffer(buf, dtype=np.uint8, count=nbytes, offset=off)
    if t == 0:
        x = raw.view("<f4").astype(np.float64)
    elif t == 1:
        x = f16(raw.view("<u2"))
    elif t == 30:
        x = (raw.view("<u2").astype(np.uint32) << 16).view("<f4").astype(np.float64)
    elif t == 8:  # Q8_0: d (f16), 32 x int8
        b = raw.reshape(-1, 34)
        d = f16(b[:, 0:2].copy().view("<u2"))
        q = b[:, 2:].view(np.int8).astype(np.float64)
        x = (q * d[:, None]).reshape(-1)
    elif t == 2:  # Q4_0: d, 16 bytes; low nibbles 0..15, high 16..31
        b = raw.reshape(-1, 18)
        d = f16(b[:, 0:2].copy().view("<u2"))
        qs = b[:, 2:]
        q = np.concatenate([qs & 15, qs >> 4], axis=1).astype(np.float64) - 8
        x = (q * d[:, None]).reshape(-1)
    elif t == 12:  # Q4_K
        b = raw.reshape(-1, 144)
        d = f16(b[:, 0:2].copy().view("<u2"))
        dmin = f16(b[:, 2:4].copy().view("<u2"))
        sc, mn = k4_scales(b[:, 4:16])
        qs = b[:, 16:]
        out = np.zeros((b.shape[0], 256))
        for j in range(4):
            q = qs[:, 32 * j:32 * j + 32]
            out[:, 64 * j:64 * j + 32] = (d * sc[:, 2 * j])[:, None] * (q & 15) - (dmin * mn[:, 2 * j])[:, None]
            out[:, 64 * j + 32:64 * j + 64] = (d * sc[:, 2 * j + 1])[:, None] * (q >> 4) - (dmin * mn[:, 2 * j + 1])[:, None]
        x = out.reshape(-1)
    elif t == 14:  # Q6_K
        b = raw.reshape(-1, 210)
        ql = b[:, 0:128].astype(np.int64)
        qh = b[:, 128:192].astype(np.int64)
        sc = b[:, 192:208].view(np.int8).astype(np.float64)
        d = f16(b[:, 208:210].copy().view("<u2"))
        out = np.zeros((b.shape[0], 256))
        for h in range(2):
            L = ql[:, 64 * h:64 * h + 64]
            H = qh[:, 32 * h:32 * h + 32]
            S = sc[:, 8 * h:8 * h + 8]
            for l in range(32):
                i = l // 16
                q1 = ((L[:, l] & 15) | (((H[:, l] >> 0) & 3) << 4)) - 32
                q2 = ((L[:, l + 32] & 15) | (((H[:, l] >> 2) & 3) << 4)) - 32
                q3 = ((L[:, l] >> 4) | (((H[:, l] >> 4) & 3) << 4)) - 32
                q4 = ((L[:, l + 32] >> 4) | (((H[:, l] >> 6) & 3) << 4)) - 32
                base = 128 * h
                out[:, base + l] = d * S[:, i] * q1
                out[:, base + l + 32] = d * S[:, i + 2] * q2
                out[:, base + l + 64] = d * S[:, i + 4] * q3
                out[:, base + l + 96] = d * S[:, i + 6] * q4
        x = out.reshape(-1)
    elif t == 3:  # Q4_1: d, m, 16 bytes; value q * d + m
        b = raw.reshape(-1, 20)
        d = f16(b[:, 0:2].copy().view("<u2"))
        m = f16(b[:, 2:4].copy().view("<u2"))
        x = (nibbles(b[:, 4:]) * d[:, None] + m[:, None]).reshape(-1)
    elif t == 6:  # Q5_0: d, qh (32 bits), 16 bytes; value (q - 16) * d
        b = raw.reshape(-1, 22)
        d = f16(b[:, 0:2].copy().view("<u2"))
        x = ((q5_values(b[:, 6:], b[:, 2:6]) - 16) * d[:, None]).reshape(-1)
    elif t == 7:  # Q5_1: d, m, qh, 16 bytes; value q * d + m
        b = raw.reshape(-1, 24)
        d = f16(b[:, 0:2].copy().view("<u2"))
        m = f16(b[:, 2:4].copy().view("<u2"))
        x = (q5_values(b[:, 8:], b[:, 4:8]) * d[:, None] + m[:, None]).reshape(-1)
    elif t == 20:  # IQ4_NL: d, 16 bytes of indices into the table
        b = raw.reshape(-1, 18)
        d = f16(b[:, 0:2].copy().view("<u2"))
        x = (IQ4[nibbles(b[:, 2:])] * d[:, None]).reshape(-1)
    elif t == 10:  # Q2_K: scales (scale | min << 4), qs, d, dmin
        b = raw.reshape(-1, 84)
        sc = b[:, 0:16].astype(np.int64)
        qs = b[:, 16:80].astype(np.int64)
        d = f16(b[:, 80:82].copy().view("<u2"))
        dmin = f16(b[:, 82:84].copy().view("<u2"))
        q = (qs[:, K2_BYTE] >> K2_SHIFT) & 3
        g = _E // 16
        x = (d[:, None] * (sc[:, g] & 15) * q -
             dmin[:, None] * (sc[:, g] >> 4)).reshape(-1)
    elif t == 11:  # Q3_K: hmask, qs, 12 bytes of 6-bit scales, d
        b = raw.reshape(-1, 110)
        hm = b[:, 0:32].astype(np.int64)
        qs = b[:, 32:96].astype(np.int64)
        sc = q3_scales(b[:, 96:108])
        d = f16(b[:, 108:110].copy().view("<u2"))
        q = ((qs[:, K2_BYTE] >> K2_SHIFT) & 3) - 4 * (1 - ((hm[:, _HL] >> K2_HBIT) & 1))
        x = (d[:, None] * sc[:, _E // 16] * q).reshape(-1)
    elif t == 13:  # Q5_K: d, dmin, scales as Q4_K, qh, qs
        b = raw.reshape(-1, 176)
        d = f16(b[:, 0:2].copy().view("<u2"))
        dmin = f16(b[:, 2:4].copy().view("<u2"))
        sc, mn = k4_scales(b[:, 4:16])
        qh = b[:, 16:48].astype(np.int64)
        qs = b[:, 48:176].astype(np.int64)
        c, hh, l = _E // 64, (_E % 64) // 32, _E % 32
        j = _E // 32
        q = ((qs[:, 32 * c + l] >> (4 * hh)) & 15) | (((qh[:, l] >> j) & 1) << 4)
        x = (d[:, None] * sc[:, j] * q - dmin[:, None] * mn[:, j]).reshape(-1)
    elif t == 23:  # IQ4_XS: d, scales_h, scales_l, 8 sub-blocks of indices
        b = raw.reshape(-1, 136)
        d = f16(b[:, 0:2].copy().view("<u2"))
        sh = b[:, 2:4].copy().view("<u2").astype(np.int64).reshape(-1, 1)
        sl = b[:, 4:8].astype(np.int64)
        ib = np.arange(8)
        ls = ((sl[:, ib // 2] >> (4 * (ib % 2))) & 15) | (((sh >> (2 * ib)) & 3) << 4)
        qs = b[:, 8:136]
        idx = np.concatenate([nibbles(qs[:, 16 * k:16 * k + 16]) for k in range(8)], axis=1)
        x = (d[:, None] * (ls - 32)[:, _E // 32] * IQ4[idx]).reshape(-1)
    else:
        raise SystemExit("ref.py: tensor type %d not supported" % t)
    # ne[0] is the row length: a [rows, cols] matrix
    return x.reshape(list(reversed(ne))) if len(ne) > 1 else x


class Model:
    def __init__(self, path):
        buf, meta, tensors = load_gguf(path)
        self.arch = arch = meta["general.architecture"]
        g = lambda k, d=None: meta.get("%s.%s" % (arch, k), d)
        self.n_layer = g("block_count")
        self.n_embd = g("embedding_length")
        self.n_head = g("attention.head_count")
        self.n_head_kv = g("attention.head_count_kv", self.n_head)
        self.hd = g("attention.key_length", self.n_embd // self.n_head)
        self.n_rot = g("rope.dimension_count", self.hd)
        self.eps = g("attention.layer_norm_rms_epsilon", 1e-5 if arch == "llama" else 1e-6)
        self.base = g("rope.freq_base", 10000.0 if arch == "llama" else 1e6)
        self.neox = arch in ("qwen2", "qwen3", "gemma2", "gemma3", "phi3")
        # cos and sin times rope.scaling.attn_factor, as ggml's rope does
        self.mscale = g("rope.scaling.attn_factor", 1.0)
        self.gemma = arch in ("gemma2", "gemma3")
        # sliding-window layers: gemma3 five in six, RoPE base 10000 there;
        # gemma2 every other one
        # llama (Mistral 7B v0.1): every layer slides
        self.n_swa = g("attention.sliding_window", 0) if self.gemma or arch == "llama" else 0
        self.pattern, self.base_swa = {"gemma3": (6, 10000.0), "gemma2": (2, None)}.get(arch, (1, None))
        self.attn_cap = g("attn_logit_softcapping", 50.0) if arch == "gemma2" else 0
        self.final_cap = g("final_logit_softcapping", 30.0) if arch == "gemma2" else 0
        W = lambda n: dequant(buf, *tensors[n])
        self.W = W
        self.has = lambda n: n in tensors
        self.tok = W("token_embd.weight")
        self.out_norm = W("output_norm.weight")
        self.out = W("output.weight") if self.has("output.weight") else self.tok
        self.ff = W("rope_freqs.weight") if self.has("rope_freqs.weight") else None
        if self.has("rope_factors_long.weight"):
            # phi3 long RoPE: the long factors past the original context
            # (REF_NCTX: the context edgeq ran with)
            n_ctx = int(os.environ.get("REF_NCTX", g("context_length")))
            orig = g("rope.scaling.original_context_length", g("context_length"))
            self.ff = W("rope_factors_long.weight" if n_ctx > orig else "rope_factors_short.weight")
        if self.ff is None and g("rope.scaling.type") == "llama3":
            # Llama 3.1's bands from the metadata
            half = self.n_rot // 2
            fr = self.base ** (-2.0 * np.arange(half) / self.n_rot)
            fac, lo = g("rope.scaling.factor"), g("rope.scaling.low_freq_factor", 1.0)
            hi = g("rope.scaling.high_freq_factor", 4.0)
            ctx = g("rope.scaling.original_context_length", 8192)
            wl = 2 * np.pi / fr
            sm = (ctx / wl - lo) / (hi - lo)
            self.ff = np.where(wl < ctx / hi, 1.0, np.where(
                wl > ctx / lo, fac, 1.0 / ((1 - sm) / fac + sm)))
        self.layers = []
        for l in range(self.n_layer):
            p = "blk.%d." % l
            names = ("attn_norm", "attn_output", "ffn_norm", "ffn_down")
            if not self.has(p + "attn_qkv.weight"):
                names += ("attn_q", "attn_k", "attn_v", "ffn_gate", "ffn_up")
            L = {k: W(p + k + ".weight") for k in names}
            if self.has(p + "attn_qkv.weight"):  # phi3: fused q|k|v, gate|up
                qkv, gu = W(p + "attn_qkv.weight"), W(p + "ffn_up.weight")
                qd, kvd = self.n_head * self.hd, self.n_head_kv * self.hd
                L["attn_q"], L["attn_k"], L["attn_v"] = qkv[:qd], qkv[qd:qd + kvd], qkv[qd + kvd:]
                F = gu.shape[0] // 2
                L["ffn_gate"], L["ffn_up"] = gu[:F], gu[F:]
            for k in ("attn_q", "attn_k", "attn_v"):
                L[k + ".bias"] = W(p + k + ".bias") if self.has(p + k + ".bias") else None
            for k in ("attn_q_norm", "attn_k_norm", "post_attention_norm", "post_ffw_norm"):
                L[k] = W(p + k + ".weight") if self.has(p + k + ".weight") else None
            self.layers.append(L)

    def rmsnorm(self, x, w):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * w

    def rope(self, x, pos, base=None):
        # x: [T, heads, hd]
        half = self.n_rot // 2
        inv = (base or self.base) ** (-2.0 * np.arange(half) / self.n_rot)
        if self.ff is not None and base is None:
            inv = inv / self.ff
        th = pos[:, None] * inv[None, :]  # [T, half]
        c = np.cos(th)[:, None, :] * self.mscale
        s = np.sin(th)[:, None, :] * self.mscale
        y = x.copy()
        if self.neox:
            a, b = x[..., :half], x[..., half:self.n_rot]
            y[..., :half] = a * c - b * s
            y[..., half:self.n_rot] = a * s + b * c
        else:
            a, b = x[..., 0:self.n_rot:2], x[..., 1:self.n_rot:2]
            y[..., 0:self.n_rot:2] = a * c - b * s
            y[..., 1:self.n_rot:2] = a * s + b * c
        return y

    def logits(self, toks):
        T = len(toks)
        x = self.tok[np.array(toks)]
        if self.gemma:
            x = x * np.sqrt(self.n_embd)
        pos = np.arange(T, dtype=np.float64)
        H, KV, hd = self.n_head, self.n_head_kv, self.hd
        mask = np.triu(np.full((T, T), -np.inf), 1)
        for li, L in enumerate(self.layers):
            swa = self.n_swa and (self.pattern == 1 or li % self.pattern < self.pattern - 1)
            base = self.base_swa if swa else None
            m = mask
            if swa:  # key t visible from query i when i - t < n_swa
                i, t = np.arange(T)[:, None], np.arange(T)[None, :]
                m = np.where(i - t >= self.n_swa, -np.inf, mask)
            h = self.rmsnorm(x, L["attn_norm"])
            q = h @ L["attn_q"].T
            k = h @ L["attn_k"].T
            v = h @ L["attn_v"].T
            if L["attn_q.bias"] is not None:
                q = q + L["attn_q.bias"]
                k = k + L["attn_k.bias"]
                v = v + L["attn_v.bias"]
            q, k = q.reshape(T, H, hd), k.reshape(T, KV, hd)
            if L["attn_q_norm"] is not None:  # qwen3: per head, before RoPE
                q = self.rmsnorm(q, L["attn_q_norm"])
                k = self.rmsnorm(k, L["attn_k_norm"])
            q = self.rope(q, pos, base)
            k = self.rope(k, pos, base)
            v = v.reshape(T, KV, hd)
            o = np.zeros((T, H, hd))
            for hh in range(H):
                kv = hh // (H // KV)
                s = q[:, hh, :] @ k[:, kv, :].T / np.sqrt(hd)
                if self.attn_cap:
                    s = self.attn_cap * np.tanh(s / self.attn_cap)
                s = s + m
                s = np.exp(s - s.max(axis=1, keepdims=True))
                s /= s.sum(axis=1, keepdims=True)
                o[:, hh, :] = s @ v[:, kv, :]
            a = o.reshape(T, H * hd) @ L["attn_output"].T
            if L["post_attention_norm"] is not None:
                a = self.rmsnorm(a, L["post_attention_norm"])
            x = x + a
            h = self.rmsnorm(x, L["ffn_norm"])
            gt = h @ L["ffn_gate"].T
            up = h @ L["ffn_up"].T
            if self.gemma:  # GELU, tanh form
                act = 0.5 * gt * (1 + np.tanh(np.sqrt(2 / np.pi) * (gt + 0.044715 * gt ** 3)))
            else:
                act = gt / (1 + np.exp(-gt))
            d = (act * up) @ L["ffn_down"].T
            if L["post_ffw_norm"] is not None:
                d = self.rmsnorm(d, L["post_ffw_norm"])
            x = x + d
        lg = self.rmsnorm(x, self.out_norm) @ self.out.T
        if self.final_cap:
            lg = self.final_cap * np.tanh(lg / self.final_cap)
        return lg


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "logits":
        m = Model(sys.argv[2])
        toks = [int(t) for t in sys.argv[3].split(",")]
        print(json.dumps(m.logits(toks).tolist()))
        return 0
    if len(sys.argv) == 6 and sys.argv[1] == "compare":
        m = Model(sys.argv[2])
        j = json.loads(open(sys.argv[4]).read())
        tol = float(sys.argv[5])
        pt, gen = j["prompt_tokens"], j["tokens"]
        ref = m.logits(pt + gen)
        nv = ref.shape[1]
        got = np.fromfile(sys.argv[3], dtype="<f4").astype(np.float64).reshape(-1, nv)
        if got.shape[0] != len(gen) + 1:
            print("dump has %d rows, expected %d" % (got.shape[0], len(gen) + 1))
            return 1
        worst, bad = 0.0, 0
        for r in range(got.shape[0]):
            want = ref[len(pt) - 1 + r]
            scale = max(1.0, np.abs(want).max())
            err = np.abs(got[r] - want).max() / scale
            worst = max(worst, err)
            top = np.argsort(-want)[:2]
            margin = (want[top[0]] - want[top[1]]) / scale
            if err > tol:
                print("row %d: max error %.3g > %.3g" % (r, err, tol))
                bad += 1
            elif margin > 2 * tol and int(np.argmax(got[r])) != int(top[0]):
                print("row %d: greedy %d, reference %d (margin %.3g)" %
                      (r, int(np.argmax(got[r])), int(top[0]), margin))
                bad += 1
        print("rows %d, worst relative error %.3g (tolerance %.3g), %d bad" %
              (got.shape[0], worst, tol, bad))
        return 1 if bad else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
