#!/usr/bin/env python3
"""Writes small GGUF v3 files into DIR, the fuzz_gguf seeds: every metadata type (nested arrays too), a tiny model's
keys for each architecture family, and one tensor of each weight type. Generated, not committed: bench/fuzz.sh runs
this into its scratch corpus (beside the first 64 KiB of ../shared/models/stories260K.gguf)."""
import random
import struct
import sys
from pathlib import Path

# type id -> (elements per block, bytes per block), as kernels/quant/ggml_types.cpp
WEIGHT_TYPES = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34),
                12: (256, 144), 13: (256, 176), 14: (256, 210), 30: (1, 2)}


def string(s):
    b = s.encode()
    return struct.pack('<Q', len(b)) + b


def value(kind, v):
    if kind == 8:
        return string(v)
    if kind == 9:
        elem, items = v
        return struct.pack('<IQ', elem, len(items)) + b''.join(value(elem, i) for i in items)
    return struct.pack('<' + {0: 'B', 1: 'b', 2: 'H', 3: 'h', 4: 'I', 5: 'i', 6: 'f', 7: '?', 10: 'Q', 11: 'q',
                              12: 'd'}[kind], v)


def gguf(metadata, tensors, rng, alignment=32):
    """metadata: [(key, type, value)]; tensors: [(name, dims, type)] with random data."""
    out = b'GGUF' + struct.pack('<IQQ', 3, len(tensors), len(metadata))
    for key, kind, v in metadata:
        out += string(key) + struct.pack('<I', kind) + value(kind, v)
    offset, blobs = 0, []
    for name, dims, kind in tensors:
        per_block, block_bytes = WEIGHT_TYPES[kind]
        n = 1
        for d in dims:
            n *= d
        nbytes = n // per_block * block_bytes
        out += string(name) + struct.pack('<I', len(dims)) + b''.join(struct.pack('<Q', d) for d in dims)
        out += struct.pack('<IQ', kind, offset)
        blobs.append(bytes(rng.getrandbits(8) for _ in range(nbytes)))
        offset += (nbytes + alignment - 1) // alignment * alignment
    out += b'\0' * (-len(out) % alignment)
    for blob in blobs:
        out += blob + b'\0' * (-len(blob) % alignment)
    return out


def model(arch, extra=()):
    p = arch + '.'
    tokens = ['<unk>', '<s>', '</s>'] + [f'<0x{b:02X}>' for b in range(8)] + ['a', 'b', ' the']
    meta = [('general.architecture', 8, arch), ('general.name', 8, 'tiny-' + arch),
            (p + 'context_length', 4, 64), (p + 'embedding_length', 4, 32), (p + 'feed_forward_length', 4, 64),
            (p + 'block_count', 4, 1), (p + 'attention.head_count', 4, 4), (p + 'attention.head_count_kv', 4, 2),
            (p + 'attention.layer_norm_rms_epsilon', 6, 1e-5), (p + 'rope.freq_base', 6, 10000.0),
            ('tokenizer.ggml.model', 8, 'llama'), ('tokenizer.ggml.tokens', 9, (8, tokens)),
            ('tokenizer.ggml.scores', 9, (6, [float(-i) for i in range(len(tokens))])),
            ('tokenizer.ggml.token_type', 9, (5, [3, 3, 3] + [6] * 8 + [1] * 3))] + list(extra)
    tensors = [('token_embd.weight', [32, len(tokens)], 0), ('output_norm.weight', [32], 0),
               ('blk.0.attn_q.weight', [32, 32], 8), ('blk.0.ffn_up.weight', [32, 64], 2)]
    return meta, tensors


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(22)
    every_type = [('u8', 0, 7), ('i8', 1, -7), ('u16', 2, 700), ('i16', 3, -700), ('u32', 4, 70000),
                  ('i32', 5, -70000), ('f32', 6, 0.5), ('bool', 7, True), ('str', 8, 'h\u00e9llo'),
                  ('arr', 9, (5, [1, 2, 3])), ('nested', 9, (9, [(8, ['x', 'y']), (8, [])])), ('u64', 10, 2**40),
                  ('i64', 11, -2**40), ('f64', 12, 0.25), ('general.alignment', 4, 64)]
    seeds = {'every_metadata_type': gguf(every_type, [('t', [64], 0)], rng, alignment=64),
             'every_weight_type': gguf([], [(f'w{k}', [256, 2], k) for k in WEIGHT_TYPES], rng)}
    for arch, extra in [('llama', []), ('qwen2', []), ('qwen3', []), ('phi3', [('phi3.rope.dimension_count', 4, 8)]),
                        ('gemma2', [('gemma2.attention.sliding_window', 4, 16)]),
                        ('gemma3', [('gemma3.attention.sliding_window', 4, 16)])]:
        meta, tensors = model(arch, extra)
        seeds['model_' + arch] = gguf(meta, tensors, rng)
    for name, data in seeds.items():
        (out / (name + '.gguf')).write_bytes(data)


if __name__ == '__main__':
    main()
