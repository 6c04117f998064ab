#!/usr/bin/env python3
"""png_rows.py PNG: per pixel row of an 8-bit RGB/RGBA PNG (as headless Chromium writes a screenshot),
how many pixels fall in each colour class of launchguard's HTML report (nccl/src/html.rs):
  red      the heat map's slow pairs and flagged nodes' bars   (215, 48, 39)
  green    the heat map's healthy pairs: green clearly above red and blue
  bar      healthy nodes' bars                                 (70, 130, 180)
  curve    the median busbw-versus-size curve                  (230, 120, 0)
  magenta  the SKU's reference figures                         (255, 0, 255)
Prints `WIDTH HEIGHT` and then one line per row: `y red green bar curve magenta`. Standard library
only (zlib): the test needs no imaging package."""
import struct
import sys
import zlib

CLASSES = {
    "red": (215, 48, 39),
    "bar": (70, 130, 180),
    "curve": (230, 120, 0),
    "magenta": (255, 0, 255),
}
TOL = 12


def decode(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"png_rows: {path}: not a PNG file")
    pos, idat, w, h, ctype = 8, b"", 0, 0, 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                raise SystemExit(f"png_rows: {path}: only 8-bit RGB/RGBA, non-interlaced (depth {depth}, type {ctype})")
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    rows = []
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pr = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pr) & 255
        rows.append(line)
        prev = line
    return w, h, bpp, rows


def near(px, ref):
    return all(abs(px[k] - ref[k]) <= TOL for k in range(3))


def main():
    w, h, bpp, rows = decode(sys.argv[1])
    print(w, h)
    for y, line in enumerate(rows):
        n = {"red": 0, "green": 0, "bar": 0, "curve": 0, "magenta": 0}
        for x in range(0, w * bpp, bpp):
            px = line[x:x + 3]
            for name, ref in CLASSES.items():
                if near(px, ref):
                    n[name] += 1
                    break
            else:
                if px[1] > px[0] + 30 and px[1] > px[2] + 30:
                    n["green"] += 1
        print(y, n["red"], n["green"], n["bar"], n["curve"], n["magenta"])


if __name__ == "__main__":
    main()
