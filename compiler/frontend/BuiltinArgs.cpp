//===- compiler/frontend/BuiltinArgs.cpp - Arguments of a call ------------===//
//
// Part of attnc. A call's arguments checked against its builtin's signature
// (Builtins.h): their order and count, and each named argument's name.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/Builtins.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace attnc;

bool attnc::sortArgs(CheckContext &ctx, CallExpr &call, const Builtin &builtin,
                     CallArgs &args) {
  bool ok = true;
  Argument *firstNamed = nullptr;
  for (Argument &arg : call.args) {
    if (!arg.isNamed()) {
      if (firstNamed) {
        ctx.errorAt(*arg.value,
                    "positional argument after the named argument '" +
                        firstNamed->name + "'; put positional arguments first");
        ok = false;
      }
      args.positional.push_back(&arg);
      continue;
    }
    if (!firstNamed)
      firstNamed = &arg;
    if (!llvm::is_contained(builtin.namedArgs, arg.name)) {
      std::string msg =
          "unknown argument '" + arg.name + "' of '" + builtin.name + "'";
      if (builtin.namedArgs.empty())
        msg += "; it takes no named arguments";
      else if (std::string s = closestName(arg.name, builtin.namedArgs);
               !s.empty())
        msg += didYouMean(s);
      else
        msg +=
            "; its named arguments are " + llvm::join(builtin.namedArgs, ", ");
      ctx.error(arg.nameLoc.Start, msg, arg.nameLoc);
      ok = false;
      continue;
    }
    auto [it, inserted] = args.named.try_emplace(arg.name, &arg);
    if (!inserted) {
      ctx.error(arg.nameLoc.Start, "argument '" + arg.name + "' is given twice",
                arg.nameLoc);
      ctx.note(it->second->nameLoc.Start, "the first one is here");
      ok = false;
    }
  }
  size_t n = args.positional.size();
  if (n < builtin.minPositional || n > builtin.maxPositional) {
    std::string expected = builtin.minPositional == builtin.maxPositional
                               ? std::to_string(builtin.minPositional)
                               : std::to_string(builtin.minPositional) +
                                     " or " +
                                     std::to_string(builtin.maxPositional);
    ctx.error(call.calleeLoc.Start,
              "'" + builtin.name + "' takes " + expected +
                  " positional argument" +
                  (builtin.maxPositional == 1 ? "" : "s") + ", got " +
                  llvm::Twine(n) + "; write " + builtin.usage,
              call.getRange());
    ok = false;
  }
  return ok;
}
