//===- runtime/src/arena.cpp - Plan the temps of an entry in one arena ----===//
//
// A plan's temps are mostly short-lived: a kernel writes one, the next reads
// it, and it is dead. Giving each its own allocation costs the sum of all
// temps; placing them in one arena by lifetime costs about the largest set
// alive at one step. The placement is the greedy-by-size planner of TFLite
// and hannk: largest first, each at the lowest aligned offset that overlaps
// no placed temp alive at the same time. It is planned once per binding of
// the symbols and cached by the caller (run.cpp).
//
//===----------------------------------------------------------------------===//
#include "device_buffers.h"
#include "model.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <optional>

namespace attn::rt {
namespace {

/// `bytes` rounded up to `alignment`, or nullopt when that overflows.
std::optional<uint64_t> alignUp(uint64_t bytes, uint64_t alignment) {
  if (bytes > UINT64_MAX - (alignment - 1))
    return std::nullopt;
  return (bytes + alignment - 1) / alignment * alignment;
}

/// A temp being placed: its lifetime, size and (once placed) offset.
struct Item {
  TempLifetime life;
  uint64_t bytes;
  uint64_t offset = 0;
};

bool alive(const Item &a, const Item &b) {
  return a.life.first <= b.life.last && b.life.first <= a.life.last;
}

/// Max over steps of the bytes of the temps alive there: a sweep over the
/// steps with +bytes where a temp starts and -bytes after it ends.
uint64_t largestLiveSet(const std::vector<Item> &items, int32_t numSteps) {
  std::vector<uint64_t> starts(numSteps + 1, 0), ends(numSteps + 1, 0);
  for (const Item &item : items) {
    starts[item.life.first] += item.bytes;
    ends[item.life.last + 1] += item.bytes;
  }
  uint64_t live = 0, largest = 0;
  for (int32_t s = 0; s < numSteps; ++s) {
    live = live + starts[s] - ends[s];
    largest = std::max(largest, live);
  }
  return largest;
}

/// Greedy by size; returns the end of the highest placed temp.
uint64_t place(std::vector<Item> &items, uint64_t alignment) {
  std::vector<std::size_t> order(items.size());
  std::iota(order.begin(), order.end(), 0);
  // Largest first; ties in plan order, so the plan is deterministic.
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const Item &x = items[a], &y = items[b];
    if (x.bytes != y.bytes)
      return x.bytes > y.bytes;
    if (x.life.first != y.life.first)
      return x.life.first < y.life.first;
    return x.life.buffer < y.life.buffer;
  });
  std::vector<std::size_t> placed; // by offset
  uint64_t end = 0;
  for (std::size_t i : order) {
    Item &item = items[i];
    uint64_t offset = 0;
    // The first gap between temps alive with this one that is big enough;
    // the caller checked that the aligned sizes sum without overflow, and
    // no offset exceeds that sum.
    for (std::size_t p : placed) {
      const Item &other = items[p];
      if (!alive(item, other))
        continue;
      if (offset + item.bytes <= other.offset)
        break;
      offset =
          std::max(offset, *alignUp(other.offset + other.bytes, alignment));
    }
    item.offset = offset;
    end = std::max(end, offset + item.bytes);
    auto at = std::upper_bound(
        placed.begin(), placed.end(), offset,
        [&](uint64_t o, std::size_t p) { return o < items[p].offset; });
    placed.insert(at, i);
  }
  return end;
}

} // namespace

std::optional<uint64_t> byteSize(const std::vector<int64_t> &dims,
                                 uint64_t itemSize) {
  uint64_t bytes = itemSize;
  for (int64_t d : dims)
    if (__builtin_mul_overflow(bytes, uint64_t(d), &bytes))
      return std::nullopt;
  return bytes;
}

std::vector<TempLifetime> tempLifetimes(const attn_model_entry &entry) {
  std::vector<TempLifetime> byBuffer(entry.num_buffers, {-1, -1, -1});
  for (int32_t s = 0; s < entry.num_steps; ++s)
    for (int32_t a = 0; a < entry.steps[s].num_args; ++a) {
      int32_t b = entry.steps[s].args[a];
      if (entry.buffers[b].kind != ATTN_MODEL_BUFFER_TEMP)
        continue;
      TempLifetime &life = byBuffer[b];
      if (life.buffer < 0)
        life = {b, s, s};
      life.last = s;
    }
  std::vector<TempLifetime> lifetimes;
  for (const TempLifetime &life : byBuffer)
    if (life.buffer >= 0)
      lifetimes.push_back(life);
  return lifetimes;
}

attn_status planArena(const attn_model_desc &desc,
                      const attn_model_entry &entry,
                      const std::vector<TempLifetime> &lifetimes,
                      const std::vector<int64_t> &symbols, uint64_t alignment,
                      ArenaPlan &plan) {
  std::string entryName = "entry '" + std::string(entry.name) + "'";
  Binding binding;
  binding.symbols = symbols;
  plan.symbols = symbols;
  plan.bufferDims.assign(entry.num_buffers, {});
  plan.offsets.assign(entry.num_buffers, 0);
  for (int32_t b = 0; b < entry.num_buffers; ++b) {
    const attn_model_buffer &buf = entry.buffers[b];
    plan.bufferDims[b].resize(buf.rank);
    if (attn_status s = resolveDims(desc, buf, binding,
                                    entryName + " buffer " + std::to_string(b),
                                    plan.bufferDims[b].data());
        s != ATTN_OK)
      return s;
  }

  std::vector<Item> items;
  uint64_t total = 0, alignedTotal = 0;
  for (const TempLifetime &life : lifetimes) {
    const attn_model_buffer &buf = entry.buffers[life.buffer];
    const std::vector<int64_t> &dims = plan.bufferDims[life.buffer];
    std::optional<uint64_t> bytes =
        byteSize(dims, attn_dtype_lookup(buf.dtype)->size);
    std::optional<uint64_t> aligned =
        bytes ? alignUp(*bytes, alignment) : std::nullopt;
    if (!aligned || __builtin_add_overflow(total, *bytes, &total) ||
        __builtin_add_overflow(alignedTotal, *aligned, &alignedTotal) ||
        alignedTotal > SIZE_MAX)
      return fail(ATTN_ERROR_OUT_OF_MEMORY,
                  "temporary buffer " + std::to_string(life.buffer) + " of " +
                      entryName + " (dims " +
                      dimsString(dims.data(), buf.rank) +
                      ") makes the temporaries too large to address: bound "
                      "the model's symbols");
    items.push_back({life, *bytes});
  }
  plan.tempBytes = total;
  plan.largestLiveBytes = largestLiveSet(items, entry.num_steps);
  // The arena ends on an aligned boundary, as every temp's start does.
  plan.arenaBytes = *alignUp(place(items, alignment), alignment);
  for (const Item &item : items)
    plan.offsets[item.life.buffer] = item.offset;
  return ATTN_OK;
}

EntryState::~EntryState() {
  std::free(arena);
  if (deviceOwner)
    releaseDeviceBuffers(*deviceOwner, *this);
}

} // namespace attn::rt
