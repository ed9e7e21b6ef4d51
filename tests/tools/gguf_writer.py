#!/usr/bin/python3
"""gguf_writer -- write GGUF v2/v3 files for trove's tests, with numpy
quantisers and dequantisers for the llama.cpp tensor types trove reads.

Usage from Python (run with /usr/bin/python3, which has Debian's numpy):

    sys.path.insert(0, "tests/tools"); from gguf_writer import GGUFWriter, dequantize
    w = GGUFWriter("tiny.gguf")
    w.add_kv("general.architecture", "bert")
    w.add_kv("bert.block_count", 2, "uint32")
    w.add_kv("tokenizer.ggml.tokens", ["[PAD]", "a"])          # array of strings
    w.add_kv("tokenizer.ggml.scores", [0.0, -1.5], "array:float32")
    w.add_kv("nested", [[1, 2], ["x"]], "array:array")          # arrays of arrays
    deq = w.add_tensor("blk.0.attn_q.weight", W, "Q8_0")        # W: numpy [out, in]
    w.write()

add_tensor() returns the float32 array that the file really holds (the
dequantised weights), so a reference forward pass can use exactly those.
`dequantize(qtype, raw_bytes, shape)` decodes stored bytes independently of
the quantiser. Shapes are PyTorch order (outermost first); the file stores
ggml order (ne[0] = last axis). The last axis must be a multiple of the
block size (32 for Q4_0/Q8_0, 256 for the K-quants).

Value types for add_kv: uint8 int8 uint16 int16 uint32 int32 float32 bool
string uint64 int64 float64, "array:<type>" and "array:array" (element
types inferred). Without a type: bool->bool, int->int32 (int64 if it does
not fit), float->float32, str->string, bytes->array:uint8, list->array with
the element type inferred, numpy arrays -> array of their dtype.

Command line (used by the C tests):
    gguf_writer.py testfile OUT.gguf OUT.f32   a file with every kv type and
        one tensor of every supported type; OUT.f32 holds the python-
        dequantised values of all tensors concatenated (little-endian f32).
    gguf_writer.py seeds DIR                   small fuzz seed files
"""
import struct
import sys

import numpy as np

GGUF_MAGIC = b"GGUF"

VT = {
    "uint8": 0, "int8": 1, "uint16": 2, "int16": 3, "uint32": 4, "int32": 5,
    "float32": 6, "bool": 7, "string": 8, "array": 9, "uint64": 10,
    "int64": 11, "float64": 12,
}
_SCALAR_FMT = {
    0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
    10: "<Q", 11: "<q", 12: "<d",
}
_NP_VT = {
    np.dtype(np.uint8): 0, np.dtype(np.int8): 1, np.dtype(np.uint16): 2,
    np.dtype(np.int16): 3, np.dtype(np.uint32): 4, np.dtype(np.int32): 5,
    np.dtype(np.float32): 6, np.dtype(np.bool_): 7, np.dtype(np.uint64): 10,
    np.dtype(np.int64): 11, np.dtype(np.float64): 12,
}

# ggml tensor type ids, elements per block, bytes per block
QTYPES = {
    "F32": (0, 1, 4), "F16": (1, 1, 2), "Q4_0": (2, 32, 18), "Q5_0": (6, 32, 22),
    "Q5_1": (7, 32, 24), "Q8_0": (8, 32, 34),
    "Q4_K": (12, 256, 144), "Q5_K": (13, 256, 176), "Q6_K": (14, 256, 210),
    "BF16": (30, 1, 2),
}


# ---------------------------------------------------------------- values

def _infer_vt(value):
    if isinstance(value, (bool, np.bool_)):
        return VT["bool"]
    if isinstance(value, (int, np.integer)):
        return VT["int32"] if -2**31 <= int(value) < 2**31 else VT["int64"]
    if isinstance(value, (float, np.floating)):
        return VT["float32"]
    if isinstance(value, str):
        return VT["string"]
    if isinstance(value, (bytes, bytearray, list, tuple, np.ndarray)):
        return VT["array"]
    raise TypeError("cannot infer GGUF type of %r" % (value,))


def _parse_type(t):
    """'uint32' -> (4, None); 'array:float32' -> (9, 6); 'array' -> (9, None)."""
    if t is None:
        return None, None
    if isinstance(t, int):
        return t, None
    parts = t.split(":", 1)
    vt = VT[parts[0]]
    elem = _parse_type(parts[1])[0] if len(parts) > 1 else None
    return vt, elem


def _enc_str(s):
    b = s.encode("utf-8") if isinstance(s, str) else bytes(s)
    return struct.pack("<Q", len(b)) + b


def _enc_value(vt, value, elem=None):
    if vt == VT["string"]:
        return _enc_str(value)
    if vt == VT["array"]:
        if isinstance(value, (bytes, bytearray)):
            value = np.frombuffer(bytes(value), dtype=np.uint8)
        if isinstance(value, np.ndarray):
            if elem is None:
                elem = _NP_VT[value.dtype]
            items = list(value.reshape(-1))
        else:
            items = list(value)
        if elem is None:
            elem = _infer_vt(items[0]) if items else VT["int32"]
            if elem in (VT["int32"], VT["int64"]) and any(
                    isinstance(x, (int, np.integer)) and not -2**31 <= int(x) < 2**31
                    for x in items):
                elem = VT["int64"]
        out = [struct.pack("<IQ", elem, len(items))]
        if elem in _SCALAR_FMT and isinstance(value, np.ndarray) and \
                _NP_VT.get(value.dtype) == elem:
            out.append(value.astype(value.dtype.newbyteorder("<")).tobytes())
        else:
            for x in items:
                out.append(_enc_value(elem, x))
        return b"".join(out)
    fmt = _SCALAR_FMT[vt]
    if vt in (VT["float32"], VT["float64"]):
        return struct.pack(fmt, float(value))
    if vt == VT["bool"]:
        return struct.pack(fmt, bool(value))
    return struct.pack(fmt, int(value))


# ---------------------------------------------------------------- halves

def f16_bits(x):
    return np.asarray(x, dtype=np.float32).astype("<f2").view("<u2")


def f16_from_bits(b):
    return np.asarray(b, dtype="<u2").view("<f2").astype(np.float32)


def bf16_bits(x):
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    nan = np.isnan(np.asarray(x, dtype=np.float32))
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def bf16_from_bits(b):
    return (np.asarray(b, dtype=np.uint32) << 16).astype(np.uint32).view(np.float32)


# ---------------------------------------------------------------- quantisers
# Each takes a float32 array of shape [nblocks, block] and returns uint8
# [nblocks, type_size]. Layouts are llama.cpp's block structs.

def _safe_inv(d):
    with np.errstate(divide="ignore"):
        return np.where(d != 0, 1.0 / np.where(d != 0, d, 1), 0.0)


def _q8_0(x):
    amax = np.abs(x).max(axis=1)
    d16 = f16_bits(amax / 127.0)
    d = f16_from_bits(d16)
    q = np.clip(np.rint(x * _safe_inv(d)[:, None]), -127, 127).astype(np.int8)
    return np.concatenate([d16[:, None].view(np.uint8).reshape(-1, 2), q.view(np.uint8)], axis=1)


def _q4_0(x):
    idx = np.abs(x).argmax(axis=1)
    mx = x[np.arange(len(x)), idx]
    d16 = f16_bits(mx / -8.0)
    d = f16_from_bits(d16)
    q = np.clip(np.floor(x * _safe_inv(d)[:, None] + 8.5), 0, 15).astype(np.uint8)
    qs = q[:, :16] | (q[:, 16:] << 4)
    return np.concatenate([d16[:, None].view(np.uint8).reshape(-1, 2), qs], axis=1)


def _q5_bits(q):
    """q uint8 [nb, 32] in 0..31 -> qh (4 bytes: bit j = 5th bit of element j) + qs [nb, 16]."""
    qs = (q[:, :16] & 0xF) | ((q[:, 16:] & 0xF) << 4)
    qh = (((q.astype(np.uint32) >> 4) & 1) << np.arange(32, dtype=np.uint32)).sum(axis=1)
    return np.concatenate([qh.astype("<u4")[:, None].view(np.uint8), qs.astype(np.uint8)], axis=1)


def _q5_0(x):
    idx = np.abs(x).argmax(axis=1)
    mx = x[np.arange(len(x)), idx]
    d16 = f16_bits(mx / -16.0)
    d = f16_from_bits(d16)
    q = np.clip(np.floor(x * _safe_inv(d)[:, None] + 16.5), 0, 31).astype(np.uint8)
    return np.concatenate([d16[:, None].view(np.uint8).reshape(-1, 2), _q5_bits(q)], axis=1)


def _q5_1(x):
    lo, hi = x.min(axis=1), x.max(axis=1)
    d16, m16 = f16_bits((hi - lo) / 31.0), f16_bits(lo)
    d, m = f16_from_bits(d16), f16_from_bits(m16)
    q = np.clip(np.rint((x - m[:, None]) * _safe_inv(d)[:, None]), 0, 31).astype(np.uint8)
    head = np.stack([d16, m16], axis=1).view(np.uint8).reshape(-1, 4)
    return np.concatenate([head, _q5_bits(q)], axis=1)


def _pack_k_scales(sc, mn):
    """sc, mn: uint8 [nb, 8] 6-bit values -> uint8 [nb, 12] (get_scale_min_k4 layout)."""
    s = np.zeros((len(sc), 12), dtype=np.uint8)
    s[:, 0:4] = (sc[:, 0:4] & 63) | ((sc[:, 4:8] >> 4) << 6)
    s[:, 4:8] = (mn[:, 0:4] & 63) | ((mn[:, 4:8] >> 4) << 6)
    s[:, 8:12] = (sc[:, 4:8] & 0xF) | ((mn[:, 4:8] & 0xF) << 4)
    return s


def _unpack_k_scales(s):
    sc = np.zeros((len(s), 8), dtype=np.uint8)
    mn = np.zeros((len(s), 8), dtype=np.uint8)
    sc[:, 0:4] = s[:, 0:4] & 63
    mn[:, 0:4] = s[:, 4:8] & 63
    sc[:, 4:8] = (s[:, 8:12] & 0xF) | ((s[:, 0:4] >> 6) << 4)
    mn[:, 4:8] = (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)
    return sc, mn


def _k_affine(x, nmax):
    """Shared by Q4_K/Q5_K: x [nb, 256] -> (d16, dmin16, sc, mn, q[nb,256] in 0..nmax)."""
    nb = len(x)
    sub = x.reshape(nb, 8, 32)
    lo = np.minimum(sub.min(axis=2), 0.0)          # value = s*q - m with m = -lo >= 0
    hi = sub.max(axis=2)
    scale = (hi - lo) / nmax
    mins = -lo
    d16 = f16_bits(scale.max(axis=1) / 63.0)
    dmin16 = f16_bits(mins.max(axis=1) / 63.0)
    d = f16_from_bits(d16)
    dmin = f16_from_bits(dmin16)
    sc = np.clip(np.rint(scale * _safe_inv(d)[:, None]), 0, 63).astype(np.uint8)
    mn = np.clip(np.rint(mins * _safe_inv(dmin)[:, None]), 0, 63).astype(np.uint8)
    eff_s = d[:, None] * sc
    eff_m = dmin[:, None] * mn
    q = np.clip(np.rint((sub + eff_m[:, :, None]) * _safe_inv(eff_s)[:, :, None]), 0, nmax)
    return d16, dmin16, sc, mn, q.astype(np.uint8).reshape(nb, 256)


def _q4_k(x):
    d16, dmin16, sc, mn, q = _k_affine(x, 15)
    q = q.reshape(len(x), 4, 2, 32)
    qs = (q[:, :, 0, :] | (q[:, :, 1, :] << 4)).reshape(len(x), 128)
    head = np.stack([d16, dmin16], axis=1).view(np.uint8).reshape(-1, 4)
    return np.concatenate([head, _pack_k_scales(sc, mn), qs], axis=1)


def _q5_k(x):
    d16, dmin16, sc, mn, q = _k_affine(x, 31)
    q = q.reshape(len(x), 4, 2, 32)
    qs = ((q[:, :, 0, :] & 0xF) | ((q[:, :, 1, :] & 0xF) << 4)).reshape(len(x), 128)
    qh = np.zeros((len(x), 32), dtype=np.uint8)
    for c in range(4):
        qh |= ((q[:, c, 0, :] >> 4) << (2 * c)).astype(np.uint8)
        qh |= ((q[:, c, 1, :] >> 4) << (2 * c + 1)).astype(np.uint8)
    head = np.stack([d16, dmin16], axis=1).view(np.uint8).reshape(-1, 4)
    return np.concatenate([head, _pack_k_scales(sc, mn), qh, qs], axis=1)


def _q6_k(x):
    nb = len(x)
    sub = x.reshape(nb, 16, 16)
    idx = np.abs(sub).argmax(axis=2)
    mx = np.take_along_axis(sub, idx[:, :, None], axis=2)[:, :, 0]
    scale = mx / -32.0
    amax_s = np.abs(scale).max(axis=1)
    d16 = f16_bits(amax_s / 127.0)
    d = f16_from_bits(d16)
    sc = np.clip(np.rint(scale * _safe_inv(d)[:, None]), -128, 127).astype(np.int8)
    eff = d[:, None] * sc
    q = np.clip(np.rint(sub * _safe_inv(eff)[:, :, None]), -32, 31).astype(np.int16) + 32
    q = q.reshape(nb, 2, 4, 32).astype(np.uint8)     # [half][quarter][l]
    ql = np.zeros((nb, 2, 64), dtype=np.uint8)
    ql[:, :, 0:32] = (q[:, :, 0] & 0xF) | ((q[:, :, 2] & 0xF) << 4)
    ql[:, :, 32:64] = (q[:, :, 1] & 0xF) | ((q[:, :, 3] & 0xF) << 4)
    qh = ((q[:, :, 0] >> 4) | ((q[:, :, 1] >> 4) << 2) |
          ((q[:, :, 2] >> 4) << 4) | ((q[:, :, 3] >> 4) << 6)).astype(np.uint8)
    return np.concatenate([ql.reshape(nb, 128), qh.reshape(nb, 64), sc.view(np.uint8),
                           d16[:, None].view(np.uint8).reshape(-1, 2)], axis=1)


_QUANT = {"Q8_0": _q8_0, "Q4_0": _q4_0, "Q5_0": _q5_0, "Q5_1": _q5_1, "Q4_K": _q4_k,
          "Q5_K": _q5_k, "Q6_K": _q6_k}


def quantize(qtype, arr):
    """float array (any shape, last axis a multiple of the block) -> bytes."""
    a = np.ascontiguousarray(arr, dtype=np.float32)
    if qtype == "F32":
        return a.astype("<f4").tobytes()
    if qtype == "F16":
        return f16_bits(a).tobytes()
    if qtype == "BF16":
        return bf16_bits(a).astype("<u2").tobytes()
    _, bs, ts = QTYPES[qtype]
    if a.shape[-1] % bs:
        raise ValueError("%s: last dimension %d is not a multiple of %d" % (qtype, a.shape[-1], bs))
    blocks = a.reshape(-1, bs)
    out = _QUANT[qtype](blocks)
    assert out.shape == (len(blocks), ts), (qtype, out.shape)
    return out.astype(np.uint8).tobytes()


# ---------------------------------------------------------------- dequantisers
# Written from the block layouts, independent of the quantisers above.

def _h(b, off):
    return f16_from_bits(b[:, off:off + 2].copy().view("<u2")[:, 0])


def _dq_q8_0(b):
    d = _h(b, 0)
    return d[:, None] * b[:, 2:34].view(np.int8).astype(np.float32)


def _dq_q4_0(b):
    d = _h(b, 0)
    qs = b[:, 2:18]
    q = np.concatenate([qs & 0xF, qs >> 4], axis=1).astype(np.float32) - 8
    return d[:, None] * q


def _dq_q5(b, one):
    """Q5_0: d * (q - 16); Q5_1: d * q + m (llama.cpp's order of operations)."""
    d = _h(b, 0)
    o = 4 if one else 2
    qh = b[:, o:o + 4].copy().view("<u4")[:, 0]
    qs = b[:, o + 4:o + 20]
    hi = ((qh[:, None] >> np.arange(32, dtype=np.uint32)) & 1).astype(np.int32) << 4
    q = np.concatenate([qs & 0xF, qs >> 4], axis=1).astype(np.int32) | hi
    if one:
        return q.astype(np.float32) * d[:, None] + _h(b, 2)[:, None]
    return (q - 16).astype(np.float32) * d[:, None]


def _dq_kaffine(b, five):
    nb = len(b)
    d, dmin = _h(b, 0), _h(b, 2)
    sc, mn = _unpack_k_scales(b[:, 4:16])
    if five:
        qh, qs = b[:, 16:48], b[:, 48:176]
    else:
        qh, qs = None, b[:, 16:144]
    y = np.zeros((nb, 256), dtype=np.float32)
    for c in range(4):
        ql = qs[:, 32 * c:32 * c + 32]
        lo = (ql & 0xF).astype(np.float32)
        hi = (ql >> 4).astype(np.float32)
        if five:
            lo += ((qh >> (2 * c)) & 1) * 16
            hi += ((qh >> (2 * c + 1)) & 1) * 16
        j0, j1 = 2 * c, 2 * c + 1
        y[:, 64 * c:64 * c + 32] = (d * sc[:, j0])[:, None] * lo - (dmin * mn[:, j0])[:, None]
        y[:, 64 * c + 32:64 * c + 64] = (d * sc[:, j1])[:, None] * hi - (dmin * mn[:, j1])[:, None]
    return y


def _dq_q6_k(b):
    nb = len(b)
    ql, qh = b[:, 0:128], b[:, 128:192]
    sc = b[:, 192:208].view(np.int8).astype(np.float32)
    d = _h(b, 208)
    y = np.zeros((nb, 256), dtype=np.float32)
    for h in range(2):
        L = ql[:, 64 * h:64 * h + 64]
        H = qh[:, 32 * h:32 * h + 32]
        parts = [
            (L[:, 0:32] & 0xF) | (((H >> 0) & 3) << 4),
            (L[:, 32:64] & 0xF) | (((H >> 2) & 3) << 4),
            (L[:, 0:32] >> 4) | (((H >> 4) & 3) << 4),
            (L[:, 32:64] >> 4) | (((H >> 6) & 3) << 4),
        ]
        for k, p in enumerate(parts):
            e0 = 128 * h + 32 * k
            q = p.astype(np.float32) - 32
            s = np.repeat(sc[:, e0 // 16:e0 // 16 + 2], 16, axis=1)
            y[:, e0:e0 + 32] = d[:, None] * s * q
    return y


_DEQUANT = {"Q8_0": _dq_q8_0, "Q4_0": _dq_q4_0, "Q6_K": _dq_q6_k,
            "Q5_0": lambda b: _dq_q5(b, False), "Q5_1": lambda b: _dq_q5(b, True),
            "Q4_K": lambda b: _dq_kaffine(b, False), "Q5_K": lambda b: _dq_kaffine(b, True)}


def dequantize(qtype, raw, shape):
    """Stored bytes of a tensor -> float32 array of `shape` (PyTorch order)."""
    shape = tuple(int(s) for s in shape)
    n = int(np.prod(shape)) if shape else 1
    buf = np.frombuffer(bytes(raw), dtype=np.uint8)
    if qtype == "F32":
        return buf.view("<f4").astype(np.float32).reshape(shape)
    if qtype == "F16":
        return f16_from_bits(buf.view("<u2")).reshape(shape)
    if qtype == "BF16":
        return bf16_from_bits(buf.view("<u2")).reshape(shape)
    _, bs, ts = QTYPES[qtype]
    blocks = buf.reshape(n // bs, ts)
    return _DEQUANT[qtype](blocks).astype(np.float32).reshape(shape)


# ---------------------------------------------------------------- writer

class GGUFWriter:
    def __init__(self, path, version=3, alignment=32):
        self.path = path
        self.version = version
        self.alignment = alignment
        self.kvs = []        # (key, encoded type+value bytes)
        self.tensors = []    # (name, ne list, type id, bytes)
        if alignment != 32:
            self.add_kv("general.alignment", alignment, "uint32")

    def add_kv(self, key, value, type=None):
        if any(k == key for k, _ in self.kvs):
            raise ValueError("duplicate metadata key %r" % key)
        vt, elem = _parse_type(type)
        if vt is None:
            vt = _infer_vt(value)
        self.kvs.append((key, struct.pack("<I", vt) + _enc_value(vt, value, elem)))

    def add_tensor(self, name, arr, qtype="F32"):
        """Store arr (float, PyTorch order) as qtype; returns the values stored."""
        a = np.asarray(arr, dtype=np.float32)
        if not 1 <= a.ndim <= 4:
            raise ValueError("%s: tensors have 1 to 4 dimensions, not %d" % (name, a.ndim))
        raw = quantize(qtype, a)
        self.add_tensor_raw(name, list(reversed(a.shape)), QTYPES[qtype][0], raw)
        return dequantize(qtype, raw, a.shape)

    def add_tensor_raw(self, name, ne, type_id, raw):
        """ne in ggml order (ne[0] innermost); raw bytes stored unchanged."""
        if any(t[0] == name for t in self.tensors):
            raise ValueError("duplicate tensor name %r" % name)
        self.tensors.append((name, [int(x) for x in ne], int(type_id), bytes(raw)))

    def to_bytes(self):
        out = bytearray(GGUF_MAGIC)
        out += struct.pack("<IQQ", self.version, len(self.tensors), len(self.kvs))
        for key, enc in self.kvs:
            out += _enc_str(key) + enc
        off = 0
        offsets = []
        for name, ne, tid, raw in self.tensors:
            offsets.append(off)
            off += len(raw)
            off += (-off) % self.alignment
        for (name, ne, tid, raw), o in zip(self.tensors, offsets):
            out += _enc_str(name) + struct.pack("<I", len(ne))
            out += b"".join(struct.pack("<Q", x) for x in ne)
            out += struct.pack("<IQ", tid, o)
        out += b"\0" * ((-len(out)) % self.alignment)
        for (name, ne, tid, raw), o in zip(self.tensors, offsets):
            out += raw
            out += b"\0" * ((-len(raw)) % self.alignment)
        return bytes(out)

    def write(self):
        with open(self.path, "wb") as f:
            f.write(self.to_bytes())


# ---------------------------------------------------------------- command line

def _testfile(path, f32_path):
    """Every kv type, one tensor of every supported type (plus raw random
    blocks of each quantised type), and the python-
    dequantised values (tensor order, concatenated) in f32_path. test_gguf.c
    and test_quant.c check the values they expect against this file."""
    rng = np.random.default_rng(1234)
    w = GGUFWriter(path)
    w.add_kv("t.u8", 200, "uint8")
    w.add_kv("t.i8", -100, "int8")
    w.add_kv("t.u16", 60000, "uint16")
    w.add_kv("t.i16", -30000, "int16")
    w.add_kv("t.u32", 4000000000, "uint32")
    w.add_kv("t.i32", -2000000000, "int32")
    w.add_kv("t.f32", 1.5, "float32")
    w.add_kv("t.bool", True, "bool")
    w.add_kv("t.str", "héllo wörld", "string")
    w.add_kv("t.u64", 2**63 + 5, "uint64")
    w.add_kv("t.i64", -2**62, "int64")
    w.add_kv("t.f64", 2.25, "float64")
    w.add_kv("t.arr_str", ["a", "", "中文", "x\0y"], "array:string")
    w.add_kv("t.arr_f32", [0.5, -1.25, 3.0], "array:float32")
    w.add_kv("t.arr_i32", [1, -2, 3, -4], "array:int32")
    w.add_kv("t.arr_u8", b"\x00\x01\xff", "array:uint8")
    w.add_kv("t.arr_bool", [True, False, True], "array:bool")
    w.add_kv("t.arr_nested", [[1, 2, 3], ["p", "q"], [[7], []]], "array:array")
    w.add_kv("t.arr_empty", [], "array:int32")
    deqs = []
    for i, qt in enumerate(["F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_K", "Q5_K", "Q6_K"]):
        bs = QTYPES[qt][1]
        cols = 512 if bs == 256 else 64
        a = rng.standard_normal((3, cols)).astype(np.float32) * (0.5 + i)
        a[0, :7] = 0  # exercise zero and small values
        deqs.append(w.add_tensor("t." + qt, a, qt).reshape(-1))
    # raw random blocks: every bit pattern of quants and packed scales,
    # with sane f16 scale fields
    for qt in ["Q8_0", "Q4_0", "Q4_K", "Q5_K", "Q6_K"]:
        tid, bs, ts = QTYPES[qt]
        raw = rng.integers(0, 256, size=(8, ts), dtype=np.uint8)
        doff = 208 if qt == "Q6_K" else 0
        raw[:, doff:doff + 2] = f16_bits(rng.uniform(0.01, 1.0, 8)).view(np.uint8).reshape(8, 2)
        if qt in ("Q4_K", "Q5_K"):
            raw[:, 2:4] = f16_bits(rng.uniform(0.0, 0.3, 8)).view(np.uint8).reshape(8, 2)
        w.add_tensor_raw("r." + qt, [bs * 4, 2], tid, raw.tobytes())
        deqs.append(dequantize(qt, raw.tobytes(), (2, bs * 4)).reshape(-1))
    # Q5_0 and Q5_1 (added later: after the others, so their order holds)
    for i, qt in enumerate(["Q5_0", "Q5_1"]):
        a = rng.standard_normal((3, 64)).astype(np.float32) * (0.5 + i) + (0.3 if i else 0)
        a[0, :7] = 0
        deqs.append(w.add_tensor("t." + qt, a, qt).reshape(-1))
    for qt in ["Q5_0", "Q5_1"]:
        tid, bs, ts = QTYPES[qt]
        raw = rng.integers(0, 256, size=(8, ts), dtype=np.uint8)
        raw[:, 0:2] = f16_bits(rng.uniform(0.01, 1.0, 8)).view(np.uint8).reshape(8, 2)
        if qt == "Q5_1":
            raw[:, 2:4] = f16_bits(rng.uniform(-1.0, 1.0, 8)).view(np.uint8).reshape(8, 2)
        w.add_tensor_raw("r." + qt, [bs * 4, 2], tid, raw.tobytes())
        deqs.append(dequantize(qt, raw.tobytes(), (2, bs * 4)).reshape(-1))
    w.write()
    np.concatenate(deqs).astype("<f4").tofile(f32_path)


def _seeds(d):
    import os
    rng = np.random.default_rng(7)
    os.makedirs(d, exist_ok=True)
    w = GGUFWriter(os.path.join(d, "kv_all.gguf"))
    w.add_kv("general.architecture", "bert")
    w.add_kv("a.u8", 1, "uint8"); w.add_kv("a.i16", -3, "int16"); w.add_kv("a.f64", 0.5, "float64")
    w.add_kv("a.u64", 9, "uint64"); w.add_kv("a.b", False); w.add_kv("a.s", "str")
    w.add_kv("a.arr", [["x", "y"], [1, 2]], "array:array")
    w.add_kv("a.f", [1.0, 2.0], "array:float32")
    w.add_tensor("w", rng.standard_normal((2, 32)), "F32")
    w.write()
    for qt in ["F16", "BF16", "Q8_0", "Q4_0", "Q4_K", "Q5_K", "Q6_K"]:
        bs = QTYPES[qt][1]
        w = GGUFWriter(os.path.join(d, "t_%s.gguf" % qt.lower()))
        w.add_kv("general.architecture", "gemma-embedding")
        w.add_kv("tokenizer.ggml.tokens", ["<pad>", "a", "b"])
        w.add_tensor("x." + qt, rng.standard_normal((2, max(bs, 32))), qt)
        w.add_tensor("bias", rng.standard_normal(4), "F32")
        w.write()
    w = GGUFWriter(os.path.join(d, "v2_align64.gguf"), version=2, alignment=64)
    w.add_kv("k", "v")
    w.add_tensor("a", rng.standard_normal((1, 2, 3, 32)), "Q8_0")
    w.add_tensor("b", rng.standard_normal(5), "F32")
    w.write()
    for qt in ["Q5_0", "Q5_1"]:  # added later, after the others: theirs stay as they were
        w = GGUFWriter(os.path.join(d, "t_%s.gguf" % qt.lower()))
        w.add_kv("general.architecture", "gemma-embedding")
        w.add_kv("tokenizer.ggml.tokens", ["<pad>", "a", "b"])
        w.add_tensor("x." + qt, rng.standard_normal((2, 64)), qt)
        w.add_tensor("bias", rng.standard_normal(4), "F32")
        w.write()


def main(argv):
    if len(argv) == 4 and argv[1] == "testfile":
        _testfile(argv[2], argv[3])
    elif len(argv) == 3 and argv[1] == "seeds":
        _seeds(argv[2])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
