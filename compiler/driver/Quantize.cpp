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

llvm::Expected<QuantizeReport> quantizeCheckpoint(const std::string &in,
                                                  const std::string &out,
                                                  const QuantizeOptions &opts) {
  llvm::Regex only(opts.only), inOut(opts.inOut);
  std::string why;
  if (!opts.only.empty() && !only.isValid(why))
    return error("--only '" + opts.only + "' is not a regex: " + why);
  if (!opts.inOut.empty() && !inOut.isValid(why))
    return error("--in-out '" + opts.inOut + "' is not a regex: " + why);
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
    int64_t rows = t.shape[0], cols = t.shape[1];
    int64_t outs = columns ? cols : rows;
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
                       "]: a non-finite weight has no int8 value; fix the "
                       "checkpoint or leave the tensor out with --only");
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
  writer.setMetadata("quantized_by",
                     "attnc quantize: int8, symmetric, per output channel");
  if (st::Status written = writer.write(out); !written)
    return error(written.message());
  return report;
}

} // namespace attnc::driver
