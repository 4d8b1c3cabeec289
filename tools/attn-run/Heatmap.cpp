//===- tools/attn-run/Heatmap.cpp - Attention weights as a PNG ------------===//
//
// Draws an [S, T] slice of attention weights into an RGB buffer (cells, a
// colour bar with its scale, a title, axis titles and labels in a built-in
// bitmap font, since libpng draws no text) and writes it with libpng through a
// temporary file and rename(2). The layout is described in Heatmap.h.
//
//===----------------------------------------------------------------------===//
#include "Heatmap.h"

#include <fmt/core.h>
#include <png.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

namespace attn::run {
namespace {

//===----------------------------------------------------------------------===//
// Font: printable ASCII (0x20 to 0x7E), 5x7, one byte a row from the top, bit
// 4 the leftmost pixel. Anything else is drawn as '?'.
//===----------------------------------------------------------------------===//

constexpr int GlyphW = 5, GlyphH = 7, Advance = 6, LineH = 8;

const uint8_t Font[95][GlyphH] = {
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}, // ' '
    {0x04, 0x04, 0x04, 0x04, 0x04, 0x00, 0x04}, // !
    {0x0A, 0x0A, 0x0A, 0x00, 0x00, 0x00, 0x00}, // "
    {0x0A, 0x0A, 0x1F, 0x0A, 0x1F, 0x0A, 0x0A}, // #
    {0x04, 0x0F, 0x14, 0x0E, 0x05, 0x1E, 0x04}, // $
    {0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03}, // %
    {0x0C, 0x12, 0x14, 0x08, 0x15, 0x12, 0x0D}, // &
    {0x0C, 0x04, 0x08, 0x00, 0x00, 0x00, 0x00}, // '
    {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02}, // (
    {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08}, // )
    {0x00, 0x04, 0x15, 0x0E, 0x15, 0x04, 0x00}, // *
    {0x00, 0x04, 0x04, 0x1F, 0x04, 0x04, 0x00}, // +
    {0x00, 0x00, 0x00, 0x00, 0x0C, 0x04, 0x08}, // ,
    {0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00}, // -
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C}, // .
    {0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00}, // /
    {0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E}, // 0
    {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E}, // 1
    {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F}, // 2
    {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E}, // 3
    {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02}, // 4
    {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E}, // 5
    {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E}, // 6
    {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08}, // 7
    {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E}, // 8
    {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C}, // 9
    {0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x0C, 0x00}, // :
    {0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x04, 0x08}, // ;
    {0x02, 0x04, 0x08, 0x10, 0x08, 0x04, 0x02}, // <
    {0x00, 0x00, 0x1F, 0x00, 0x1F, 0x00, 0x00}, // =
    {0x08, 0x04, 0x02, 0x01, 0x02, 0x04, 0x08}, // >
    {0x0E, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04}, // ?
    {0x0E, 0x11, 0x01, 0x0D, 0x15, 0x15, 0x0E}, // @
    {0x0E, 0x11, 0x11, 0x11, 0x1F, 0x11, 0x11}, // A
    {0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E}, // B
    {0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E}, // C
    {0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C}, // D
    {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F}, // E
    {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10}, // F
    {0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F}, // G
    {0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11}, // H
    {0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E}, // I
    {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C}, // J
    {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11}, // K
    {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F}, // L
    {0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11}, // M
    {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11}, // N
    {0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}, // O
    {0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10}, // P
    {0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D}, // Q
    {0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11}, // R
    {0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E}, // S
    {0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04}, // T
    {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}, // U
    {0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04}, // V
    {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A}, // W
    {0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11}, // X
    {0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04}, // Y
    {0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F}, // Z
    {0x0E, 0x08, 0x08, 0x08, 0x08, 0x08, 0x0E}, // [
    {0x00, 0x10, 0x08, 0x04, 0x02, 0x01, 0x00}, // backslash
    {0x0E, 0x02, 0x02, 0x02, 0x02, 0x02, 0x0E}, // ]
    {0x04, 0x0A, 0x11, 0x00, 0x00, 0x00, 0x00}, // ^
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1F}, // _
    {0x08, 0x04, 0x02, 0x00, 0x00, 0x00, 0x00}, // `
    {0x00, 0x00, 0x0E, 0x01, 0x0F, 0x11, 0x0F}, // a
    {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x1E}, // b
    {0x00, 0x00, 0x0E, 0x10, 0x10, 0x11, 0x0E}, // c
    {0x01, 0x01, 0x0D, 0x13, 0x11, 0x11, 0x0F}, // d
    {0x00, 0x00, 0x0E, 0x11, 0x1F, 0x10, 0x0E}, // e
    {0x06, 0x09, 0x08, 0x1C, 0x08, 0x08, 0x08}, // f
    {0x00, 0x0F, 0x11, 0x11, 0x0F, 0x01, 0x0E}, // g
    {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x11}, // h
    {0x04, 0x00, 0x0C, 0x04, 0x04, 0x04, 0x0E}, // i
    {0x02, 0x00, 0x06, 0x02, 0x02, 0x12, 0x0C}, // j
    {0x10, 0x10, 0x12, 0x14, 0x18, 0x14, 0x12}, // k
    {0x0C, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E}, // l
    {0x00, 0x00, 0x1A, 0x15, 0x15, 0x11, 0x11}, // m
    {0x00, 0x00, 0x16, 0x19, 0x11, 0x11, 0x11}, // n
    {0x00, 0x00, 0x0E, 0x11, 0x11, 0x11, 0x0E}, // o
    {0x00, 0x00, 0x1E, 0x11, 0x1E, 0x10, 0x10}, // p
    {0x00, 0x00, 0x0D, 0x13, 0x0F, 0x01, 0x01}, // q
    {0x00, 0x00, 0x16, 0x19, 0x10, 0x10, 0x10}, // r
    {0x00, 0x00, 0x0E, 0x10, 0x0E, 0x01, 0x1E}, // s
    {0x08, 0x08, 0x1C, 0x08, 0x08, 0x09, 0x06}, // t
    {0x00, 0x00, 0x11, 0x11, 0x11, 0x13, 0x0D}, // u
    {0x00, 0x00, 0x11, 0x11, 0x11, 0x0A, 0x04}, // v
    {0x00, 0x00, 0x11, 0x11, 0x15, 0x15, 0x0A}, // w
    {0x00, 0x00, 0x11, 0x0A, 0x04, 0x0A, 0x11}, // x
    {0x00, 0x00, 0x11, 0x11, 0x0F, 0x01, 0x0E}, // y
    {0x00, 0x00, 0x1F, 0x02, 0x04, 0x08, 0x1F}, // z
    {0x02, 0x04, 0x04, 0x08, 0x04, 0x04, 0x02}, // {
    {0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04}, // |
    {0x08, 0x04, 0x04, 0x02, 0x04, 0x04, 0x08}, // }
    {0x00, 0x00, 0x08, 0x15, 0x02, 0x00, 0x00}, // ~
};

struct Rgb {
  uint8_t r, g, b;
};

/// The page, the exact zeros (masked keys, padding), and the text.
constexpr Rgb Background{255, 255, 255}, Ink{0, 0, 0};
/// A frame just outside the grid, so that masked cells at its edge, as white
/// as the page, still show where the grid ends.
constexpr Rgb Frame{190, 190, 190};
/// NaN, which a probability never is: a warning colour off the scale.
constexpr Rgb NanColour{228, 26, 28};
/// ColorBrewer's "Blues" without its near-white first step, so that the
/// smallest probability is still told from a masked cell. Every channel
/// falls from stop to stop: a larger value is never lighter in any channel.
constexpr Rgb Scale[] = {{222, 235, 247}, {198, 219, 239}, {158, 202, 225},
                         {107, 174, 214}, {66, 146, 198},  {33, 113, 181},
                         {8, 81, 156},    {8, 48, 107}};

/// The colour of `v` on a scale from 0 to `top` (> 0).
Rgb colourOf(double v, double top) {
  if (std::isnan(v))
    return NanColour;
  if (v == 0.0)
    return Background;
  double t = std::clamp(v / top, 0.0, 1.0) * (std::size(Scale) - 1);
  std::size_t i = std::min<std::size_t>(std::size_t(t), std::size(Scale) - 2);
  double f = t - double(i);
  auto mix = [f](uint8_t a, uint8_t b) {
    return uint8_t(std::lround(a + (double(b) - a) * f));
  };
  const Rgb &a = Scale[i], &b = Scale[i + 1];
  return {mix(a.r, b.r), mix(a.g, b.g), mix(a.b, b.b)};
}

/// An RGB picture, rows top to bottom.
struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;

  Image(int w, int h) : width(w), height(h), rgb(std::size_t(w) * h * 3) {
    for (std::size_t i = 0; i < rgb.size(); i += 3)
      set(i, Background);
  }
  void set(std::size_t i, Rgb c) {
    rgb[i] = c.r;
    rgb[i + 1] = c.g;
    rgb[i + 2] = c.b;
  }
  void pixel(int x, int y, Rgb c) {
    if (x >= 0 && y >= 0 && x < width && y < height)
      set((std::size_t(y) * width + x) * 3, c);
  }
  void fill(int x, int y, int w, int h, Rgb c) {
    for (int j = y; j < y + h; ++j)
      for (int i = x; i < x + w; ++i)
        pixel(i, j, c);
  }
};

/// Draws `text` (printable ASCII) at scale `k` with its top-left corner at
/// (x, y); `upward` turns it a quarter left, reading bottom to top with
/// (x, y) then the bottom-left corner.
void drawText(Image &image, int x, int y, const std::string &text, int k,
              bool upward) {
  for (std::size_t n = 0; n < text.size(); ++n) {
    const uint8_t *glyph = Font[text[n] - 0x20];
    for (int gy = 0; gy < GlyphH; ++gy)
      for (int gx = 0; gx < GlyphW; ++gx) {
        if (!(glyph[gy] & (0x10 >> gx)))
          continue;
        int along = int(n) * Advance * k + gx * k, across = gy * k;
        if (upward)
          image.fill(x + across, y - along - k, k, k, Ink);
        else
          image.fill(x + along, y + across, k, k, Ink);
      }
  }
}

//===----------------------------------------------------------------------===//
// Labels
//===----------------------------------------------------------------------===//

constexpr std::size_t MaxLabel = 12, MaxTitle = 64;

/// A token as the font can draw it: one '?' for each non-ASCII character
/// (UTF-8 continuation bytes dropped) or control byte, cut to `max`
/// characters with a '~' marking the cut.
std::string printable(const std::string &token, std::size_t max = MaxLabel) {
  std::string s;
  for (unsigned char ch : token) {
    if ((ch & 0xC0) == 0x80)
      continue;
    s += ch >= 0x20 && ch < 0x7F ? char(ch) : '?';
  }
  if (s.size() > max)
    s = s.substr(0, max - 1) + "~";
  return s;
}

/// --tokens FILE: one token a line (a trailing '\r' dropped, so a file from
/// Windows reads the same).
std::vector<std::string> readTokens(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw HeatmapError(fmt::format(
        "cannot read --tokens file '{}': {}: give a text file with one token "
        "a line",
        path, std::strerror(errno)));
  std::vector<std::string> tokens;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    tokens.push_back(line);
  }
  return tokens;
}

/// Labels for `n` positions: the tokens where given, position numbers past
/// them (padding the sentence did not name).
std::vector<std::string> labels(int64_t n,
                                const std::vector<std::string> &tokens) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < n; ++i)
    out.push_back(std::size_t(i) < tokens.size() ? printable(tokens[i])
                                                 : std::to_string(i));
  return out;
}

std::size_t longest(const std::vector<std::string> &labels) {
  std::size_t m = 0;
  for (const std::string &s : labels)
    m = std::max(m, s.size());
  return m;
}

//===----------------------------------------------------------------------===//
// Layout and drawing
//===----------------------------------------------------------------------===//

constexpr int Pad = 4, Gap = 4, MaxCell = 20, Span = 640;
/// The colour bar: its width, its gap from the grid, and its least height
/// (a grid of one query row still gets a bar long enough to read).
constexpr int BarW = 12, BarGap = 12, MinBarH = 80;
constexpr int64_t MaxPositions = 8192;

/// Pixels a label of `chars` characters takes along its line.
int textLength(std::size_t chars, int k) {
  return chars ? int(chars) * Advance * k - k : 0;
}

struct Layout {
  int cell, scale, stride; ///< px a cell, font scale, label every stride-th
  int x0, y0;              ///< the grid's top-left corner
  int barX, barY, barH;    ///< the colour bar (BarW wide)
  int width, height;
};

/// Top to bottom: the title, the axis title "key", the key labels, the
/// grid; left to right: the axis title "query" (reading upward), the query
/// labels, the grid, the colour bar and its scale's labels. Heatmap.h gives
/// the same in numbers.
Layout layout(int64_t rows, int64_t cols, std::size_t rowChars,
              std::size_t colChars, std::size_t titleChars,
              std::size_t barChars) {
  Layout l;
  int64_t n = std::max(rows, cols);
  l.cell = int(std::clamp<int64_t>(Span / n, 1, MaxCell));
  l.scale = l.cell >= 16 ? 2 : 1;
  l.stride = (LineH * l.scale + l.cell - 1) / l.cell;
  int line = LineH * l.scale + Gap; // a line of text and the gap below it
  l.x0 = Pad + line + Advance * l.scale * int(rowChars) + Gap;
  l.y0 = Pad + 2 * line + Advance * l.scale * int(colChars) + Gap;
  int gridW = int(cols) * l.cell, gridH = int(rows) * l.cell;
  l.barX = l.x0 + gridW + BarGap;
  l.barY = l.y0;
  // At least as high as the grid, and as "query" centred on the grid.
  l.barH = std::max(gridH, MinBarH);
  l.width = std::max(l.barX + BarW + Gap + textLength(barChars, l.scale) + Pad,
                     Pad + textLength(titleChars, l.scale) + Pad);
  l.height = l.y0 + l.barH + Pad;
  return l;
}

/// A one-pixel line around the grid, in the gap between it and the labels.
void drawFrame(Image &image, const Layout &l, int rows, int cols) {
  int w = cols * l.cell + 2, h = rows * l.cell + 2;
  image.fill(l.x0 - 1, l.y0 - 1, w, 1, Frame);
  image.fill(l.x0 - 1, l.y0 + h - 2, w, 1, Frame);
  image.fill(l.x0 - 1, l.y0 - 1, 1, h, Frame);
  image.fill(l.x0 + w - 2, l.y0 - 1, 1, h, Frame);
}

/// The title at the top, "key" centred over the key labels, "query" reading
/// upward left of the query labels, centred on the rows.
void drawTitles(Image &image, const Layout &l, int rows, int cols,
                const std::string &title) {
  int k = l.scale, line = LineH * k + Gap;
  drawText(image, Pad, Pad, title, k, false);
  int keyX = l.x0 + (cols * l.cell - textLength(3, k)) / 2;
  drawText(image, std::max(keyX, Pad), Pad + line, "key", k, false);
  int queryBottom = l.y0 + (rows * l.cell + textLength(5, k)) / 2;
  drawText(image, Pad, queryBottom, "query", k, true);
}

/// The scale from the largest weight (top, darkest) down to just above 0
/// (bottom, lightest), framed like the grid, each end labelled.
void drawColourBar(Image &image, const Layout &l, double top,
                   const std::string &topLabel) {
  for (int y = 0; y < l.barH; ++y) {
    // Row centres, so that the bottom row is above 0 (0 itself is white).
    double v = top * (double(l.barH - y) - 0.5) / double(l.barH);
    image.fill(l.barX, l.barY + y, BarW, 1, colourOf(v, top));
  }
  image.fill(l.barX - 1, l.barY - 1, BarW + 2, 1, Frame);
  image.fill(l.barX - 1, l.barY + l.barH, BarW + 2, 1, Frame);
  image.fill(l.barX - 1, l.barY - 1, 1, l.barH + 2, Frame);
  image.fill(l.barX + BarW, l.barY - 1, 1, l.barH + 2, Frame);
  int k = l.scale, x = l.barX + BarW + Gap;
  drawText(image, x, l.barY, topLabel, k, false);
  drawText(image, x, l.barY + l.barH - GlyphH * k, "0", k, false);
}

void drawLabels(Image &image, const Layout &l,
                const std::vector<std::string> &rows,
                const std::vector<std::string> &cols) {
  int k = l.scale, inset = (l.cell - GlyphH * k) / 2;
  for (std::size_t i = 0; i < rows.size(); i += l.stride)
    drawText(image, l.x0 - Gap - textLength(rows[i].size(), k),
             l.y0 + int(i) * l.cell + inset, rows[i], k, false);
  for (std::size_t j = 0; j < cols.size(); j += l.stride)
    drawText(image, l.x0 + int(j) * l.cell + inset, l.y0 - Gap, cols[j], k,
             true);
}

//===----------------------------------------------------------------------===//
// PNG
//===----------------------------------------------------------------------===//

/// Where libpng's error handler leaves its message before it longjmps.
struct PngErrors {
  char message[256] = "";
};

void onPngError(png_structp png, png_const_charp message) {
  auto *errors = static_cast<PngErrors *>(png_get_error_ptr(png));
  std::snprintf(errors->message, sizeof errors->message, "%s", message);
  png_longjmp(png, 1);
}

void onPngWarning(png_structp, png_const_charp) {}

/// Encodes `image` into `file`; false with `errors.message` set when libpng
/// fails. Nothing with a destructor lives across the setjmp, and nothing
/// set after it is read after a longjmp.
bool encodePng(std::FILE *file, const Image &image, png_bytep *rows,
               PngErrors &errors) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &errors,
                                            onPngError, onPngWarning);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!info) {
    png_destroy_write_struct(&png, nullptr);
    std::snprintf(errors.message, sizeof errors.message,
                  "cannot create a PNG writer (out of memory?)");
    return false;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  png_init_io(png, file);
  png_set_IHDR(png, info, png_uint_32(image.width), png_uint_32(image.height),
               8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  png_write_image(png, rows);
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}

/// Writes `image` to `path` through a temporary file beside it and
/// rename(2): a reader sees the old file or the whole new one, never a part.
void writePngAtomically(const std::string &path, const Image &image) {
  std::string tmp = path + ".tmp.XXXXXX";
  int fd = ::mkstemp(tmp.data());
  if (fd < 0)
    throw HeatmapError(fmt::format(
        "cannot write the heat map '{}': creating a temporary file beside it "
        "failed ({}): check that the directory exists and is writable",
        path, std::strerror(errno)));
  std::FILE *file = ::fdopen(fd, "wb");
  auto abandon = [&](const std::string &why) {
    if (file)
      std::fclose(file);
    else
      ::close(fd);
    ::unlink(tmp.c_str());
    return HeatmapError(fmt::format(
        "cannot write the heat map '{}': {}; the old file is untouched", path,
        why));
  };
  if (!file)
    throw abandon(fmt::format("fdopen failed ({})", std::strerror(errno)));
  std::vector<png_bytep> rows(image.height);
  for (int y = 0; y < image.height; ++y)
    rows[y] =
        const_cast<png_bytep>(&image.rgb[std::size_t(y) * image.width * 3]);
  PngErrors errors;
  if (!encodePng(file, image, rows.data(), errors))
    throw abandon(fmt::format("libpng: {}", errors.message));
  // mkstemp creates the file 0600; a picture is ordinary data.
  if (std::fflush(file) != 0 || ::fchmod(fd, 0644) != 0 || ::fsync(fd) != 0)
    throw abandon(fmt::format("writing it failed ({})", std::strerror(errno)));
  int closed = std::fclose(file);
  file = nullptr;
  fd = -1;
  if (closed != 0)
    throw abandon(fmt::format("closing the temporary file failed ({})",
                              std::strerror(errno)));
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    throw abandon(fmt::format("renaming the temporary file into place failed "
                              "({})",
                              std::strerror(errno)));
}

std::string shape(const std::vector<int64_t> &dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

std::string outputList(const std::vector<HeatmapTensor> &outputs) {
  std::string s;
  for (const HeatmapTensor &t : outputs)
    s += (s.empty() ? "" : ", ") + t.name + " " + shape(t.dims);
  return s;
}

/// The output named by --heatmap-output, or the one to draw by default.
std::size_t pickOutput(const std::string &wanted,
                       const std::vector<HeatmapTensor> &outputs) {
  std::vector<std::size_t> rank4;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (!wanted.empty() && outputs[i].name == wanted) {
      if (outputs[i].dims.size() != 4)
        throw HeatmapError(fmt::format(
            "--heatmap-output '{}' is {}, not attention weights [B, H, S, T]: "
            "name a rank-4 output (the model's outputs: {})",
            wanted, shape(outputs[i].dims), outputList(outputs)));
      return i;
    }
    if (outputs[i].dims.size() == 4)
      rank4.push_back(i);
  }
  if (!wanted.empty())
    throw HeatmapError(
        fmt::format("--heatmap-output '{}': the model has no such output "
                    "(its outputs: {})",
                    wanted, outputList(outputs)));
  if (rank4.empty())
    throw HeatmapError(fmt::format(
        "--heatmap: the model has no attention weights output [B, H, S, T] to "
        "draw (its outputs: {}); return them from the model, e.g. `a, w = "
        "self_attention(...)` and `output w`",
        outputList(outputs)));
  if (rank4.size() == 1)
    return rank4[0];
  for (std::size_t i : rank4)
    if (outputs[i].name == "weights")
      return i;
  std::string names;
  for (std::size_t i : rank4)
    names += (names.empty() ? "" : ", ") + outputs[i].name;
  throw HeatmapError(fmt::format("--heatmap: the model has several rank-4 "
                                 "outputs ({}): pick one with --heatmap-output",
                                 names));
}

void checkIndex(const char *option, int64_t value, int64_t extent,
                const char *what, const HeatmapTensor &t) {
  if (value < extent)
    return;
  throw HeatmapError(fmt::format(
      "{} {} is out of range: '{}' {} has {} {}, so give {} 0 to {}", option,
      value, t.name, shape(t.dims), extent, what, option, extent - 1));
}

} // namespace

std::size_t chooseHeatmapOutput(const HeatmapOptions &options,
                                const std::vector<HeatmapTensor> &outputs) {
  std::size_t i = pickOutput(options.output, outputs);
  const HeatmapTensor &t = outputs[i];
  checkIndex("--batch", options.batch, t.dims[0], "batch entries", t);
  checkIndex("--head", options.head, t.dims[1], "heads", t);
  return i;
}

std::string writeHeatmap(const HeatmapOptions &options,
                         const HeatmapTensor &weights) {
  int64_t rows = weights.dims[2], cols = weights.dims[3];
  if (rows == 0 || cols == 0)
    throw HeatmapError(fmt::format("--heatmap: '{}' {} has no cells to draw",
                                   weights.name, shape(weights.dims)));
  // At one pixel a cell, beyond this the picture outgrows any screen.
  if (std::max(rows, cols) > MaxPositions)
    throw HeatmapError(fmt::format(
        "--heatmap: '{}' {} is too large to draw (at most {} queries and "
        "keys): run a shorter sequence",
        weights.name, shape(weights.dims), MaxPositions));
  std::vector<std::string> tokens;
  if (!options.tokens.empty())
    tokens = readTokens(options.tokens);
  if (int64_t(tokens.size()) > cols)
    throw HeatmapError(fmt::format(
        "--tokens '{}' has {} tokens, but '{}' {} has {} keys: give one token "
        "a line, at most one a position",
        options.tokens, tokens.size(), weights.name, shape(weights.dims),
        cols));
  // Keys are the tokens; queries too when they run along the same sequence
  // (self-attention). Cross-attention's queries are another sentence.
  std::vector<std::string> colLabels = labels(cols, tokens);
  std::vector<std::string> rowLabels =
      labels(rows, rows == cols ? tokens : std::vector<std::string>());

  std::size_t base =
      std::size_t(options.batch * weights.dims[1] + options.head) *
      std::size_t(rows * cols);
  double top = 0;
  for (std::size_t e = 0; e < std::size_t(rows * cols); ++e)
    top = std::max(top, weights.element(base + e)); // NaN is skipped
  // The scale spans 0 to the largest weight of the slice, so that a long
  // sequence's small probabilities still show; all zeros draw as background.
  double scaleTop = top > 0 ? top : 1.0;

  std::string title =
      printable(fmt::format("{}: batch {}, head {}", weights.name,
                            options.batch, options.head),
                MaxTitle);
  std::string topLabel = fmt::format("{:.3g}", scaleTop);
  Layout l = layout(rows, cols, longest(rowLabels), longest(colLabels),
                    title.size(), topLabel.size());
  Image image(l.width, l.height);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      image.fill(l.x0 + int(j) * l.cell, l.y0 + int(i) * l.cell, l.cell, l.cell,
                 colourOf(weights.element(base + std::size_t(i * cols + j)),
                          scaleTop));
  drawFrame(image, l, int(rows), int(cols));
  drawLabels(image, l, rowLabels, colLabels);
  drawTitles(image, l, int(rows), int(cols), title);
  drawColourBar(image, l, scaleTop, topLabel);
  writePngAtomically(options.path, image);
  return fmt::format(
      "heatmap: wrote '{}': {}[{}, {}] ({} queries x {} keys), "
      "{} x {} px, {} px cells; light to dark blue: just above 0 "
      "to {:.4g}, white: exactly 0",
      options.path, weights.name, options.batch, options.head, rows, cols,
      l.width, l.height, l.cell, top);
}

} // namespace attn::run
