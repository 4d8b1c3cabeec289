"""Inputs for, and the check of, `attn-run --heatmap` (test/driver/heatmap.attn).

  heatmap_png.py inputs DIR --seq S --lengths 6,3
      writes DIR/in.safetensors (ids i32[B, S], lengths i32[B]) and
      DIR/tokens.txt (with a non-ASCII and an over-long token)
  heatmap_png.py check MAP.png OUT.safetensors --batch b --head h --length n
                 [--tokens FILE]
      decodes the PNG and checks it against the weights attn-run wrote: the
      size the layout of tools/attn-run/Heatmap.h gives, every cell one
      colour, white (the background) exactly where the weight is 0 and at
      every key >= n, a larger weight never lighter, labels in the margins,
      the title and axis titles, and the colour bar (light to dark going up,
      its ends labelled).

Python's standard library only (zlib, struct, json): no numpy, no PIL.
"""
import argparse
import json
import struct
import sys
import zlib

WHITE = (255, 255, 255)


def fail(message):
    sys.exit("heatmap_png.py: FAIL: " + message)


# --- safetensors (little-endian F32 / I32 only) -----------------------------

def write_safetensors(path, tensors):
    """tensors: name -> (dtype 'I32'|'F32', shape, flat list)."""
    header, blobs, offset = {}, [], 0
    for name, (dtype, shape, values) in tensors.items():
        blob = struct.pack("<%d%s" % (len(values), "i" if dtype == "I32" else "f"), *values)
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-(8 + len(text)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read_tensor(path, name):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack_from("<Q", data)
    header = json.loads(data[8:8 + n])
    if name not in header:
        fail("%s has no tensor %r (it has %s)" % (path, name, sorted(header)))
    t = header[name]
    if t["dtype"] != "F32":
        fail("%s: %r is %s, not F32" % (path, name, t["dtype"]))
    lo, hi = t["data_offsets"]
    count = (hi - lo) // 4
    return t["shape"], struct.unpack_from("<%df" % count, data, 8 + n + lo)


# --- PNG: 8-bit RGB, not interlaced (what attn-run writes) -------------------

def decode_png(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail("%s is not a PNG" % path)
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack_from(">I", data, pos)
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        if zlib.crc32(kind + body) != struct.unpack_from(">I", data, pos + 8 + length)[0]:
            fail("%s: bad CRC in chunk %r" % (path, kind))
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = ihdr
    if (depth, colour, interlace) != (8, 2, 0):
        fail("%s: want 8-bit RGB, not interlaced; got depth %d, colour type %d, "
             "interlace %d" % (path, depth, colour, interlace))
    raw, stride, bpp = zlib.decompress(idat), width * 3, 3
    rows, prev = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + pred) & 255
        rows.append(line)
        prev = line
    return width, height, lambda x, y: tuple(rows[y][3 * x:3 * x + 3])


# --- the layout of tools/attn-run/Heatmap.h ---------------------------------

def printable(token):
    s = "".join(ch if 0x20 <= ord(ch) < 0x7F else "?" for ch in token)
    return s if len(s) <= 12 else s[:11] + "~"


def labels(n, tokens):
    return [printable(tokens[i]) if i < len(tokens) else str(i) for i in range(n)]


def text_length(chars, k):
    return chars * 6 * k - k if chars else 0


def top_label(top):
    """C's "%.3g" of the largest weight, as the bar's top label."""
    return "%.3g" % top


def layout(rows, cols, row_chars, col_chars, title_chars, bar_chars):
    cell = max(1, min(20, 640 // max(rows, cols)))
    k = 2 if cell >= 16 else 1
    line = 8 * k + 4
    x0, y0 = 4 + line + 6 * k * row_chars + 4, 4 + 2 * line + 6 * k * col_chars + 4
    bar_x, bar_h = x0 + cols * cell + 12, max(rows * cell, 80)
    width = max(bar_x + 12 + 4 + text_length(bar_chars, k) + 4,
                4 + text_length(title_chars, k) + 4)
    return dict(cell=cell, k=k, line=line, x0=x0, y0=y0, bar_x=bar_x, bar_h=bar_h,
                width=width, height=y0 + bar_h + 4)


def check(args):
    shape, values = read_tensor(args.outputs, "weights")
    _, heads, rows, cols = shape
    base = (args.batch * heads + args.head) * rows * cols
    weight = lambda i, j: values[base + i * cols + j]
    tokens = []
    if args.tokens:
        with open(args.tokens, encoding="utf-8") as f:
            tokens = f.read().splitlines()
    col_chars = max(len(s) for s in labels(cols, tokens))
    row_chars = max(len(s) for s in labels(rows, tokens if rows == cols else []))
    top = max(v for v in values[base:base + rows * cols] if v == v)
    title = "weights: batch %d, head %d" % (args.batch, args.head)
    lay = layout(rows, cols, row_chars, col_chars, len(title), len(top_label(top)))
    cell, x0, y0, k = lay["cell"], lay["x0"], lay["y0"], lay["k"]
    want_w, want_h = lay["width"], lay["height"]

    width, height, pixel = decode_png(args.png)
    if (width, height) != (want_w, want_h):
        fail("image is %dx%d, want %dx%d (%d px cells of %dx%d, labels of %d and "
             "%d characters)" % (width, height, want_w, want_h, cell, rows, cols,
                                 row_chars, col_chars))
    colour = {}
    for i in range(rows):
        for j in range(cols):
            x, y = x0 + j * cell, y0 + i * cell
            seen = {pixel(x + dx, y + dy) for dx in range(cell) for dy in range(cell)}
            if len(seen) != 1:
                fail("cell (%d, %d) has %d colours, want one" % (i, j, len(seen)))
            colour[i, j] = seen.pop()
            w = weight(i, j)
            if j >= args.length and w != 0:
                fail("weight (%d, %d) = %g, but key %d is past length %d" %
                     (i, j, w, j, args.length))
            if (w == 0) != (colour[i, j] == WHITE):
                fail("cell (%d, %d): weight %g drawn %s; exactly 0 (only) is "
                     "white" % (i, j, w, colour[i, j]))
    # A larger weight is never lighter in any channel, and clearly darker
    # when clearly larger.
    cells = sorted((weight(i, j), colour[i, j]) for (i, j) in colour if weight(i, j) != 0)
    top = cells[-1][0]
    for (w1, c1), (w2, c2) in zip(cells, cells[1:]):
        if any(b > a for a, b in zip(c1, c2)):
            fail("weight %g drawn %s is lighter than %g drawn %s" % (w2, c2, w1, c1))
    if not sum(cells[-1][1]) < sum(cells[0][1]) - 100 or top - cells[0][0] < top / 10:
        fail("the largest weight %g (%s) is not clearly darker than the smallest "
             "%g (%s)" % (top, cells[-1][1], cells[0][0], cells[0][1]))
    # Labels: ink left of the grid and above it, a white page corner.
    ink = lambda xs, ys: any(pixel(x, y) == (0, 0, 0) for x in xs for y in ys
                             if 0 <= x < width and 0 <= y < height)
    line = lay["line"]
    if not ink(range(4 + line, x0), range(y0, y0 + rows * cell)):
        fail("no row labels left of the grid")
    if not ink(range(x0, x0 + cols * cell), range(4 + 2 * line, y0)):
        fail("no column labels above the grid")
    # The title on the first line, "key" on the second (over the grid),
    # "query" reading upward in the first column of text, beside the rows.
    if not ink(range(4, 4 + text_length(len(title), k)), range(4, 4 + 7 * k)):
        fail("no title at the top")
    if ink(range(4 + text_length(len(title), k) + 1, width), range(4, 4 + 7 * k)):
        fail("ink right of the title's %d characters" % len(title))
    if not ink(range(x0 - 6 * k, x0 + cols * cell + 6 * k), range(4 + line, 4 + line + 7 * k)):
        fail("no axis title 'key' above the column labels")
    if not ink(range(4, 4 + 7 * k), range(y0 - 6 * k, y0 + rows * cell + 6 * k)):
        fail("no axis title 'query' left of the row labels")
    # The colour bar: each row one colour, none white, never lighter in any
    # channel going up, from the scale's lightest step near the bottom to its
    # darkest at the top, framed, its ends labelled on its right.
    bar_x, bar_h = lay["bar_x"], lay["bar_h"]
    bar = []
    for y in range(y0, y0 + bar_h):
        seen = {pixel(x, y) for x in range(bar_x, bar_x + 12)}
        if len(seen) != 1:
            fail("colour bar row %d has %d colours, want one" % (y, len(seen)))
        bar.append(seen.pop())
    if WHITE in bar:
        fail("the colour bar has white, which is exactly 0, off its scale")
    for y, (upper, lower) in enumerate(zip(bar, bar[1:])):
        if any(u > l for u, l in zip(upper, lower)):
            fail("colour bar row %d %s is lighter than the row below it %s" %
                 (y0 + y, upper, lower))
    near = lambda c, want: all(abs(a - b) <= 4 for a, b in zip(c, want))
    if not near(bar[0], (8, 48, 107)) or not near(bar[-1], (222, 235, 247)):
        fail("the colour bar runs from %s (top) to %s (bottom), not the scale's "
             "dark blue to its light blue" % (bar[0], bar[-1]))
    frame = (190, 190, 190)
    if pixel(bar_x - 1, y0) != frame or pixel(bar_x + 12, y0 + bar_h - 1) != frame:
        fail("the colour bar has no frame")
    labels_x = range(bar_x + 12 + 4, bar_x + 12 + 4 + text_length(len(top_label(top)), k))
    if not ink(labels_x, range(y0, y0 + 7 * k)):
        fail("no label %r at the top of the colour bar" % top_label(top))
    if not ink(range(bar_x + 16, bar_x + 16 + 5 * k), range(y0 + bar_h - 7 * k, y0 + bar_h)):
        fail("no label '0' at the bottom of the colour bar")
    if pixel(0, 0) != WHITE or pixel(width - 1, height - 1) != WHITE:
        fail("the page is not white")
    print("heatmap_png.py: OK: %dx%d, %dx%d cells of %d px, %d masked" %
          (width, height, rows, cols, cell, sum(c == WHITE for c in colour.values())))


def inputs(args):
    lengths = [int(n) for n in args.lengths.split(",")]
    batch, seq = len(lengths), args.seq
    ids = [(3 * b + 5 * s + 1) % 16 for b in range(batch) for s in range(seq)]
    write_safetensors(args.dir + "/in.safetensors",
                      {"ids": ("I32", [batch, seq], ids),
                       "lengths": ("I32", [batch], lengths)})
    with open(args.dir + "/tokens.txt", "w", encoding="utf-8") as f:
        f.write("the\ncat\nsat\non\nna\u00efve\nsupercalifragilistic\n")


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("inputs")
    p.add_argument("dir")
    p.add_argument("--seq", type=int, required=True)
    p.add_argument("--lengths", required=True)
    p = sub.add_parser("check")
    p.add_argument("png")
    p.add_argument("outputs")
    p.add_argument("--batch", type=int, default=0)
    p.add_argument("--head", type=int, default=0)
    p.add_argument("--length", type=int, required=True)
    p.add_argument("--tokens")
    args = parser.parse_args()
    (inputs if args.command == "inputs" else check)(args)


if __name__ == "__main__":
    main()
