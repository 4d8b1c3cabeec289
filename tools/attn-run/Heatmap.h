//===- tools/attn-run/Heatmap.h - Attention weights as a PNG ----*- C++ -*-===//
//
// `attn-run --heatmap map.png` draws one [S, T] slice (a batch, a head) of a
// rank-4 attention weights output [B, H, S, T] as a PNG: queries down, keys
// across, one square cell per probability on a white-to-dark-blue scale, the
// exact zeros of masked keys in the white of the background, the token
// strings (or position numbers) along both axes, the axis titles "query" and
// "key", a title ("weights: batch 0, head 1") and, right of the grid, a
// colour bar from 0 (bottom) to the largest weight of the slice (top), each
// end labelled.
//
// Layout, so that a reader (and the test) can find every cell: with
// n = max(S, T), cells are c = clamp(640 / n, 1, 20) pixels square; text uses
// a 5x7 font at scale k = 2 when c >= 16, else 1 (advance 6k, line 8k), and
// labels are cut to 12 characters. The title is at (4, 4), "key" a line
// (8k + 4) below it. With m the longest row (column) label in characters,
// the grid's top-left corner is at x = 4 + (8k + 4) + 6k * m_rows + 4,
// y = 4 + 2 (8k + 4) + 6k * m_cols + 4. The colour bar is 12 px wide at
// (x + T*c + 12, y), max(S*c, 80) px high, framed; its labels ("%.3g" of the
// largest weight at its top, "0" at its bottom) start 4 px right of it. The
// image is y + max(S*c, 80) + 4 high, and as wide as the bar's labels end
// + 4, or the title + 8 if wider. Cells smaller than a line label every
// ceil(8k / c)-th position.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUN_HEATMAP_H
#define ATTN_RUN_HEATMAP_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace attn::run {

/// A heat map that cannot be drawn or written; the message names the option
/// or the file and what to do.
struct HeatmapError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// What --heatmap, --heatmap-output, --batch, --head and --tokens asked for.
struct HeatmapOptions {
  std::string path;   ///< the PNG to write; empty: no heat map
  std::string output; ///< the output to draw; empty: pick one
  std::string tokens; ///< a file of token strings, one a line; may be empty
  int64_t batch = 0, head = 0;
};

/// A model output as the heat map sees it: name, shape and its elements
/// (row-major) as doubles, whatever their dtype.
struct HeatmapTensor {
  std::string name;
  std::vector<int64_t> dims;
  std::function<double(std::size_t)> element;
};

/// The index in `outputs` of the tensor to draw: the one named
/// `options.output`; else the only rank-4 output, or the rank-4 one named
/// `weights`. Also checks --batch and --head against its shape. Called before
/// the run, so a bad option costs no run.
std::size_t chooseHeatmapOutput(const HeatmapOptions &options,
                                const std::vector<HeatmapTensor> &outputs);

/// Draws the chosen output's slice and writes it to `options.path`
/// atomically; returns a one-line description of what was written.
std::string writeHeatmap(const HeatmapOptions &options,
                         const HeatmapTensor &weights);

} // namespace attn::run

#endif // ATTN_RUN_HEATMAP_H
