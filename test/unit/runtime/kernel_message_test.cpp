//===- test/unit/runtime/kernel_message_test.cpp - kernel errors as read --===//
//
// runtime/src/model.h's kernelMessage: what a kernel left in its context's
// error buffer, as the runtime's message ends. A failed Halide require()
// arrives as "Requirement Failed: (false) <value> <words>\n" (the condition
// printed as its run-time value, then the require's value and message);
// the user reads the words. test/e2e (graphs.py rejects) and
// python/tests/test_attnc.py test_bad_token_id check it on real kernels.
//
//===----------------------------------------------------------------------===//
#include "model.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>

using attn::rt::kernelMessage;

namespace {

std::string read(const char *text) {
  char error[1024];
  std::snprintf(error, sizeof error, "%s", text);
  return kernelMessage(error, sizeof error);
}

TEST(KernelMessage, RequireKeepsItsWordsOnly) {
  EXPECT_EQ(read("Requirement Failed: (false) 6 attention key length 6 at "
                 "batch index 1 is outside 0 .. 5\n"),
            "attention key length 6 at batch index 1 is outside 0 .. 5");
  EXPECT_EQ(read("Requirement Failed: (false) -1 token id -1 at batch 0 "
                 "position 2 is outside 0 .. 9"),
            "token id -1 at batch 0 position 2 is outside 0 .. 9");
  // A condition printed with parentheses of its own.
  EXPECT_EQ(read("Requirement Failed: ((x < (y + 1))) 3 decode position 3"),
            "decode position 3");
}

TEST(KernelMessage, RequireWithoutWordsIsKeptWhole) {
  EXPECT_EQ(read("Requirement Failed: (false) 6\n"),
            "Requirement Failed: (false) 6");
}

TEST(KernelMessage, OtherMessagesLoseOnlyTheirTrailingNewline) {
  EXPECT_EQ(read("Input buffer b0 is accessed at -1, which is before the min "
                 "(0) in dimension 1\n"),
            "Input buffer b0 is accessed at -1, which is before the min (0) "
            "in dimension 1");
  EXPECT_EQ(read("bias contains NaN"), "bias contains NaN");
  EXPECT_EQ(read(""), "it gave no message");
  EXPECT_EQ(read("\n"), "it gave no message");
}

TEST(KernelMessage, AnUnterminatedBufferIsCut) {
  char error[8];
  std::memset(error, 'x', sizeof error);
  EXPECT_EQ(kernelMessage(error, sizeof error), "xxxxxxx");
}

} // namespace
