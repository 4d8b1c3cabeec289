//===- compiler/driver/Quantize.cpp - attnc quantize ----------------------===//
#include "compiler/driver/Quantize.h"

#include "attn/safetensors.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Regex.h"

#include <cmath>
#include <cstring>

namespace st = ::attn::safetensors;

namespace attnc::driver {
namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Element `i` of a float tensor, widened exactly to f32. The mapping may
/// leave the data misaligned, hence the copies.
float loadFloat(const st::Tensor &t, int64_t i) {
  const auto *bytes = static_cast<const uint8_t *>(t.data);
  if (t.dtype == st::DType::F32) {
    float f;
    std::memcpy(&f, bytes + 4 * i, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, bytes + 2 * i, 2);
  uint32_t bits;
  if (t.dtype == st::DType::BF16) {
    bits = uint32_t(h) << 16;
  } else {
    uint32_t sign = uint32_t(h & 0x8000) << 16;
    uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
    if (exponent == 0x1f) {
      bits = sign | 0x7f800000u | (mantissa << 13);
    } else if (exponent == 0) {
      // Zero or subnormal: mantissa * 2^-24, exact in f32.
      float f = std::ldexp(float(mantissa), -24);
      std::memcpy(&bits, &f, 4);
      bits |= sign;
    } else {
      bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
    }
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

bool isFloat(st::DType d) {
  return d == st::DType::F32 || d == st::DType::BF16 || d == st::DType::F16;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

} // namespace

int8_t quantizeValue(double w, float scale) {
  double q = std::nearbyint(w / double(scale)); // half to even (FE_TONEAREST)
  return int8_t(std::fmax(-127.0, std::fmin(127.0, q)));
}

float channelScale(double maxAbs) {
  return maxAbs > 0 ? float(maxAbs / 127.0) : 1.0f;
}

uint8_t quantizeNibble(double w, float scale) {
  double q = std::nearbyint(w / double(scale)); // half to even (FE_TONEAREST)
  return uint8_t(int(std::fmax(-7.0, std::fmin(7.0, q))) + 8);
}

float groupScale(double maxAbs) {
  return maxAbs > 0 ? float(maxAbs / 7.0) : 1.0f;
}

llvm::Expected<QuantizeReport> quantizeCheckpoint(const std::string &in,
                                                  const std::string &out,
                                                  const QuantizeOptions &opts) {
  llvm::Regex only(opts.only), inOut(opts.inOut);
  std::string why;
  if (!opts.only.empty() && !only.isValid(why))
    return error("--only '" + opts.only + "' is not a regex: " + why);
  if (!opts.inOut.empty() && !inOut.isValid(why))
    return error("--in-out '" + opts.inOut + "' is not a regex: " + why);
  if (opts.bits != 8 && opts.bits != 4)
    return error("--bits " + llvm::Twine(opts.bits) +
                 ": attnc quantizes to 8 bits (int8 per output channel) or 4 "
                 "(per group of inputs)");
  if (opts.group < 1)
    return error("--group " + llvm::Twine(opts.group) +
                 ": a group is at least one input");
  st::Expected<st::Checkpoint> file = st::Checkpoint::open(in);
  if (!file)
    return error(file.message());

  QuantizeReport report;
  st::Writer writer;
  for (const st::Tensor &t : file->tensors()) {
    report.bytesBefore += int64_t(t.sizeBytes);
    bool chosen = opts.only.empty() ? isFloat(t.dtype) && t.shape.size() == 2
                                    : only.match(t.name);
    if (!chosen) {
      if (st::Status added =
              writer.add(t.name, t.dtype, t.shape, t.data, t.sizeBytes);
          !added)
        return error(added.message());
      report.bytesAfter += int64_t(t.sizeBytes);
      continue;
    }
    if (!isFloat(t.dtype) || t.shape.size() != 2)
      return error("--only '" + opts.only + "' chooses tensor '" + t.name +
                   "' in '" + file->pathOf(t) + "', which is " +
                   st::dtypeName(t.dtype) + shapeString(t.shape) +
                   ": only 2-D F32, BF16 or F16 matrices (linear weights) "
                   "are quantized; narrow the regex");
    std::string scaleName = t.name + "_scale";
    if (file->find(scaleName))
      return error("tensor '" + t.name + "' would get its scales as '" +
                   scaleName +
                   "', but the checkpoint already holds a tensor "
                   "of that name: is it quantized already?");
    bool columns = !opts.inOut.empty() && inOut.match(t.name);
    writer.setMetadata(st::quantizedLayoutKey(t.name),
                       st::quantizedLayoutName(columns));
    int64_t rows = t.shape[0], cols = t.shape[1];
    int64_t outs = columns ? cols : rows;
    if (opts.bits == 4) {
      int64_t ins = columns ? rows : cols;
      if (ins % opts.group != 0 || ins % 2 != 0)
        return error("tensor '" + t.name + "' in '" + file->pathOf(t) +
                     "' has " + llvm::Twine(ins) + " inputs (" +
                     shapeString(t.shape) + ", " +
                     (columns ? "[in, out]" : "[out, in]") +
                     "), which groups of " + llvm::Twine(opts.group) +
                     (ins % 2 != 0 ? " and bytes of two" : "") +
                     " do not divide: choose a --group that divides it or "
                     "leave the tensor out with --only");
      for (int64_t i = 0; i < rows * cols; ++i)
        if (float w = loadFloat(t, i); !std::isfinite(w))
          return error(
              "tensor '" + t.name + "' in '" + file->pathOf(t) + "' holds " +
              (std::isnan(w) ? "NaN"
               : w > 0       ? "+Inf"
                             : "-Inf") +
              " at [" + llvm::Twine(i / cols) + ", " + llvm::Twine(i % cols) +
              "]: a non-finite weight has no 4-bit value; fix the "
              "checkpoint or leave the tensor out with --only");
      // Element (o, i) of the matrix whatever its layout; scales and bytes
      // are laid out as the matrix is, with `in` divided by G or 2.
      auto at = [&](int64_t o, int64_t i) {
        return columns ? i * cols + o : o * cols + i;
      };
      int64_t groups = ins / opts.group;
      auto scaleAt = [&](int64_t o, int64_t g) {
        return columns ? g * outs + o : o * groups + g;
      };
      auto byteAt = [&](int64_t o, int64_t j) {
        return columns ? j * outs + o : o * (ins / 2) + j;
      };
      std::vector<float> scales(outs * groups);
      std::vector<uint8_t> bytes(outs * ins / 2, 0);
      for (int64_t o = 0; o < outs; ++o)
        for (int64_t g = 0; g < groups; ++g) {
          double maxAbs = 0;
          for (int64_t i = g * opts.group; i < (g + 1) * opts.group; ++i)
            maxAbs =
                std::fmax(maxAbs, std::fabs(double(loadFloat(t, at(o, i)))));
          float scale = groupScale(maxAbs);
          scales[scaleAt(o, g)] = scale;
          for (int64_t i = g * opts.group; i < (g + 1) * opts.group; ++i)
            bytes[byteAt(o, i / 2)] |=
                quantizeNibble(loadFloat(t, at(o, i)), scale) << (4 * (i % 2));
        }
      std::vector<int64_t> byteShape =
          columns ? std::vector<int64_t>{ins / 2, outs}
                  : std::vector<int64_t>{outs, ins / 2};
      std::vector<int64_t> scaleShape =
          columns ? std::vector<int64_t>{groups, outs}
                  : std::vector<int64_t>{outs, groups};
      if (st::Status added = writer.add(t.name, st::DType::U8, byteShape,
                                        bytes.data(), bytes.size());
          !added)
        return error(added.message());
      if (st::Status added = writer.add(scaleName, st::DType::F32, scaleShape,
                                        scales.data(), scales.size() * 4);
          !added)
        return error(added.message());
      report.quantized.push_back(t.name);
      report.bytesAfter += int64_t(bytes.size() + scales.size() * 4);
      continue;
    }
    std::vector<double> maxAbs(outs, 0.0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        float w = loadFloat(t, r * cols + c);
        if (!std::isfinite(w))
          return error("tensor '" + t.name + "' in '" + file->pathOf(t) +
                       "' holds " +
                       (std::isnan(w) ? "NaN"
                        : w > 0       ? "+Inf"
                                      : "-Inf") +
                       " at [" + llvm::Twine(r) + ", " + llvm::Twine(c) +
                       "]: a non-finite weight has no " +
                       (opts.bits == 4 ? "4-bit" : "int8") +
                       " value; fix the checkpoint or leave the tensor out "
                       "with --only");
        double &m = maxAbs[columns ? c : r];
        m = std::fmax(m, std::fabs(double(w)));
      }
    std::vector<float> scales(outs);
    for (int64_t o = 0; o < outs; ++o)
      scales[o] = channelScale(maxAbs[o]);
    std::vector<int8_t> q(rows * cols);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        q[r * cols + c] =
            quantizeValue(loadFloat(t, r * cols + c), scales[columns ? c : r]);
    if (st::Status added =
            writer.add(t.name, st::DType::I8, t.shape, q.data(), q.size());
        !added)
      return error(added.message());
    if (st::Status added = writer.add(scaleName, st::DType::F32, {outs},
                                      scales.data(), scales.size() * 4);
        !added)
      return error(added.message());
    report.quantized.push_back(t.name);
    report.bytesAfter += int64_t(q.size() + scales.size() * 4);
  }
  if (!opts.only.empty() && report.quantized.empty())
    return error("--only '" + opts.only + "' matches no tensor of '" + in +
                 "'; it has " + file->tensorNames());
  writer.setMetadata(
      "quantized_by",
      opts.bits == 4
          ? "attnc quantize: 4-bit, symmetric, per group of " +
                std::to_string(opts.group) +
                " inputs, two per byte along the inputs (low nibble first), "
                "value = (nibble - 8) * scale"
          : std::string("attnc quantize: int8, symmetric, per output channel"));
  if (st::Status written = writer.write(out); !written)
    return error(written.message());
  return report;
}

} // namespace attnc::driver
