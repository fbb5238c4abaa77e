#!/usr/bin/env python3
"""Draws the WhiteBox app icon (resources/whitebox.png): a white box whose inside is a causal
attention map (lower triangle of coloured cells). Pure Python (zlib + struct) so it needs nothing
beyond the standard library; run it again after changing the drawing."""
import struct
import zlib
from pathlib import Path

SIZE = 256


def inside_rounded(x, y, x0, y0, x1, y1, r):
    cx = min(max(x, x0 + r), x1 - r)
    cy = min(max(y, y0 + r), y1 - r)
    return x0 <= x <= x1 and y0 <= y <= y1 and (x - cx) ** 2 + (y - cy) ** 2 <= r * r


def heat(t):
    # dark blue -> orange -> pale yellow, the look of the attention panel's colour scale
    stops = [(0.0, (40, 60, 120)), (0.5, (230, 120, 40)), (1.0, (255, 235, 150))]
    for (a, ca), (b, cb) in zip(stops, stops[1:]):
        if t <= b:
            u = (t - a) / (b - a)
            return tuple(int(ca[i] + (cb[i] - ca[i]) * u) for i in range(3))
    return stops[-1][1]


def pixel(x, y):
    if not inside_rounded(x, y, 8, 8, 247, 247, 40):
        return (0, 0, 0, 0)
    bg = (30, 36, 48, 255)
    # the white box: a thick square outline
    if 48 <= x <= 207 and 48 <= y <= 207 and not (64 <= x <= 191 and 64 <= y <= 191):
        return (245, 245, 245, 255)
    # a 4 x 4 causal attention map inside the box
    if 72 <= x < 184 and 72 <= y < 184:
        col, row = (x - 72) // 28, (y - 72) // 28
        if (x - 72) % 28 >= 25 or (y - 72) % 28 >= 25:
            return bg
        if col <= row:
            weights = [[1.0], [0.35, 0.65], [0.2, 0.3, 0.5], [0.5, 0.1, 0.15, 0.25]]
            return heat(weights[row][col]) + (255,)
    return bg


def main():
    raw = bytearray()
    for y in range(SIZE):
        raw.append(0)
        for x in range(SIZE):
            raw.extend(pixel(x, y))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", SIZE, SIZE, 8, 6, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(bytes(raw), 9)) + chunk(b"IEND", b"")
    Path(__file__).with_name("whitebox.png").write_bytes(png)


if __name__ == "__main__":
    main()
