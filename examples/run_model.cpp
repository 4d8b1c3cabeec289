//===- examples/run_model.cpp - run a compiled model from C++ -------------===//
//
// run_model MODEL.so [WEIGHTS.safetensors] [B S]
//
// Loads a library built by attnc (with the weights file it reads at load, if
// it reads one), lists its inputs and outputs, feeds it made-up inputs of
// batch B and sequence S (f32: a ramp in [-1, 1); i32: 0), runs it and prints
// each output's shape and range. Every element is 4 bytes (f32 or i32).
// Everything here is the public C++ API of attn.hpp; it throws attn::Error with
// the runtime's message on any misuse.
//
//===----------------------------------------------------------------------===//
#include "attn/attn.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

/// The dims of `info` with its dynamic dims bound: B for the first, S for
/// the others (a model's batch comes first, then its sequence dims).
std::vector<int64_t> concreteDims(const attn_tensor_info &info, int64_t B,
                                  int64_t S) {
  std::vector<int64_t> dims;
  bool batchBound = false;
  for (int32_t d = 0; d < info.rank; ++d) {
    const attn_dim_info &dim = info.dims[d];
    if (!dim.is_dynamic) {
      dims.push_back(dim.extent);
      continue;
    }
    dims.push_back(batchBound ? S : B);
    batchBound = true;
  }
  return dims;
}

/// "min -0.5 max 2": the range of `n` elements of dtype `dtype` at `data`.
std::string range(int32_t dtype, const void *data, int64_t n) {
  if (n == 0)
    return "empty";
  double lo = 0, hi = 0;
  for (int64_t k = 0; k < n; ++k) {
    double v = dtype == ATTN_I32 ? static_cast<const int32_t *>(data)[k]
                                 : static_cast<const float *>(data)[k];
    lo = k ? std::min(lo, v) : v;
    hi = k ? std::max(hi, v) : v;
  }
  return "min " + std::to_string(lo) + " max " + std::to_string(hi);
}

int64_t count(const std::vector<int64_t> &dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

std::string shape(const std::vector<int64_t> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

int run(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: run_model MODEL.so [WEIGHTS.safetensors] [B S]\n");
    return 2;
  }
  bool hasWeights = argc == 3 || argc == 5;
  attn::Model model =
      hasWeights ? attn::Model(argv[1], argv[2]) : attn::Model(argv[1]);
  int64_t B = argc >= 4 ? std::atoll(argv[argc - 2]) : 1;
  int64_t S = argc >= 4 ? std::atoll(argv[argc - 1]) : 8;
  std::printf("model %s (%s)\n", model.info().name,
              model.info().compiler_version);

  // Inputs: float ramps and zero ids, each its own buffer.
  std::vector<std::vector<int64_t>> inDims;
  std::vector<std::vector<float>> inData;
  std::vector<attn_tensor> inputs;
  for (int32_t i = 0; i < model.numInputs(); ++i) {
    attn_tensor_info info = model.input(i);
    inDims.push_back(concreteDims(info, B, S));
    std::vector<float> data(count(inDims.back()));
    for (size_t k = 0; k < data.size(); ++k)
      data[k] = info.dtype == ATTN_F32 ? float(k % 64) / 32.0f - 1.0f : 0.0f;
    inData.push_back(std::move(data)); // 0.0f has the bits of int32 0
    std::printf("input  %s %s\n", info.name, shape(inDims.back()).c_str());
  }
  for (int32_t i = 0; i < model.numInputs(); ++i)
    inputs.push_back({model.input(i).name, model.input(i).dtype,
                      int32_t(inDims[i].size()), inDims[i].data(),
                      inData[i].data()});

  // Outputs sized by the runtime for these inputs.
  std::vector<std::vector<int64_t>> outDims;
  std::vector<std::vector<float>> outData;
  std::vector<attn_tensor> outputs;
  for (int32_t o = 0; o < model.numOutputs(); ++o) {
    outDims.push_back(model.outputDims(inputs, o));
    outData.emplace_back(count(outDims.back()));
  }
  for (int32_t o = 0; o < model.numOutputs(); ++o)
    outputs.push_back({model.output(o).name, model.output(o).dtype,
                       int32_t(outDims[o].size()), outDims[o].data(),
                       outData[o].data()});

  model.run(inputs, outputs);
  for (int32_t o = 0; o < model.numOutputs(); ++o)
    std::printf(
        "output %s %s %s\n", model.output(o).name, shape(outDims[o]).c_str(),
        range(outputs[o].dtype, outData[o].data(), count(outDims[o])).c_str());
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    return run(argc, argv);
  } catch (const attn::Error &e) {
    std::fprintf(stderr, "run_model: %s\n", e.what());
    return 1;
  }
}
