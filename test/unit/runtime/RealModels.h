//===- test/unit/runtime/RealModels.h - Models attnc compiled ---*- C++ -*-===//
//
// The test models of test/models/ (compiled by this build's attnc into
// ATTNC_TEST_MODEL_DIR), random inputs for them, and one run.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TEST_UNIT_RUNTIME_REALMODELS_H
#define ATTNC_TEST_UNIT_RUNTIME_REALMODELS_H

#include "attn/attn.h"
#include "attn/attn.hpp"

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace attn::test {

/// One call's inputs and the memory behind them.
struct Inputs {
  std::vector<std::vector<int64_t>> dims;
  std::vector<std::vector<uint8_t>> data;
  std::vector<attn_tensor> tensors;
};

/// Inputs of batch `b` and length `s` for `model`: f32 ~ U(-2, 2), token ids
/// below the decoder's vocabulary (24), lengths in [1, s].
inline Inputs makeInputs(const Model &model, int64_t b, int64_t s,
                         unsigned seed) {
  std::mt19937 rng(seed);
  Inputs in;
  int32_t n = attn_model_num_inputs(model.get());
  in.dims.resize(n);
  in.data.resize(n);
  for (int32_t i = 0; i < n; ++i) {
    attn_tensor_info info = model.input(i);
    int64_t count = 1;
    for (int32_t k = 0; k < info.rank; ++k) {
      const attn_dim_info &d = info.dims[k];
      int64_t extent = !d.is_dynamic                  ? d.extent
                       : std::string(d.symbol) == "B" ? b
                                                      : s;
      in.dims[i].push_back(extent);
      count *= extent;
    }
    in.data[i].resize(count * 4);
    for (int64_t e = 0; e < count; ++e) {
      if (info.dtype == ATTN_F32) {
        float v = std::uniform_real_distribution<float>(-2, 2)(rng);
        std::memcpy(&in.data[i][e * 4], &v, 4);
      } else {
        int32_t v = std::string(info.name) == "lengths" ? int32_t(1 + rng() % s)
                                                        : int32_t(rng() % 24);
        std::memcpy(&in.data[i][e * 4], &v, 4);
      }
    }
  }
  for (int32_t i = 0; i < n; ++i)
    in.tensors.push_back({nullptr, model.input(i).dtype,
                          int32_t(in.dims[i].size()), in.dims[i].data(),
                          in.data[i].data()});
  return in;
}

/// The model's only output for `in`, as raw bytes.
inline std::vector<uint8_t> runOnce(Model &model, const Inputs &in) {
  std::vector<int64_t> dims = model.outputDims(in.tensors, 0);
  int64_t count = 1;
  for (int64_t d : dims)
    count *= d;
  std::vector<uint8_t> out(count * 4);
  model.run(in.tensors, {{nullptr, model.output(0).dtype, int32_t(dims.size()),
                          dims.data(), out.data()}});
  return out;
}

/// test/models/<stem>.attn, compiled, with its random weights.
inline Model loadModel(const char *stem) {
  std::string dir = ATTNC_TEST_MODEL_DIR;
  return Model(dir + "/" + stem + ".so", dir + "/" + stem + ".safetensors");
}

} // namespace attn::test

#endif // ATTNC_TEST_UNIT_RUNTIME_REALMODELS_H
