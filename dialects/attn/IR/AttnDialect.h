//===- dialects/attn/IR/AttnDialect.h - attn dialect ------------*- C++ -*-===//
#ifndef ATTNC_DIALECTS_ATTN_IR_ATTNDIALECT_H
#define ATTNC_DIALECTS_ATTN_IR_ATTNDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/attn/IR/AttnOpsDialect.h.inc"

#endif // ATTNC_DIALECTS_ATTN_IR_ATTNDIALECT_H
