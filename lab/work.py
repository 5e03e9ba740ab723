"""The contract's CPU work: 32-bit FNV-1a over the low byte of the loop index."""

FNV_OFFSET = 2166136261
FNV_PRIME = 16777619
MASK32 = 0xFFFFFFFF


def fnv1a(n: int) -> int:
    x = FNV_OFFSET
    for i in range(n):
        x = ((x ^ (i & 0xFF)) * FNV_PRIME) & MASK32
    return x
