//===- schedules/cpu/RowPrefetch.h - rows read in order, early --*- C++ -*-===//
//
// A decode attention reads its KV cache row after row; the hardware's
// prefetcher runs too little ahead of loops that work on each line. The
// loops that read the rows prefetch the rows further on.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_SCHEDULES_CPU_ROWPREFETCH_H
#define ATTNC_SCHEDULES_CPU_ROWPREFETCH_H

#include "schedules/KernelStages.h"

#include <vector>

namespace attnc::schedules {

/// Adds a lowering pass to `pipeline` that, for each of `prefetches`, makes
/// every iteration of its loop also prefetch into L2 the lines it reads of
/// the buffer's row, whole rows about 6 KiB further on. A loop whose body
/// does not read the buffer as dense rows a constant distance apart is left
/// as it was.
void addRowPrefetches(Halide::Pipeline &pipeline,
                      const std::vector<RowPrefetch> &prefetches);

} // namespace attnc::schedules

#endif // ATTNC_SCHEDULES_CPU_ROWPREFETCH_H
