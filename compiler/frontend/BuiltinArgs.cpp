//===- compiler/frontend/BuiltinArgs.cpp - Arguments of a call ------------===//
//
// Part of attnc. A call's arguments checked against its builtin's signature
// (Builtins.h): their order and count, and each named argument's name, kind
// and default, so that the builtins' checks read values, not syntax.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/Builtins.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <cassert>
#include <cmath>
#include <cstdio>

using namespace attnc;

//===----------------------------------------------------------------------===//
// Declarations
//===----------------------------------------------------------------------===//

NamedArg NamedArg::of(std::string name, ArgKind kind, std::string example) {
  NamedArg arg;
  arg.name = std::move(name);
  arg.kind = kind;
  arg.example = std::move(example);
  return arg;
}

NamedArg NamedArg::byDefault(ArgValue value) const {
  assert((kind == ArgKind::choice ? std::holds_alternative<std::string>(value)
          : kind == ArgKind::positiveInteger || kind == ArgKind::integer
              ? std::holds_alternative<int64_t>(value)
              : std::holds_alternative<double>(value)) &&
         "a default of another kind than its argument");
  NamedArg arg = *this;
  arg.defaultValue = std::move(value);
  arg.required = false;
  return arg;
}

NamedArg NamedArg::requiredAs(std::string meaning) const {
  NamedArg arg = *this;
  arg.required = true;
  arg.meaning = std::move(meaning);
  arg.defaultValue.reset();
  return arg;
}

const NamedArg *Builtin::findNamedArg(llvm::StringRef name) const {
  for (const NamedArg &arg : namedArgs)
    if (arg.name == name)
      return &arg;
  return nullptr;
}

/// `X`, `N`, `P`, `M`, or a choice's names: what stands for the value in
/// `name = VALUE`.
static std::string placeholder(const NamedArg &arg) {
  switch (arg.kind) {
  case ArgKind::number:
  case ArgKind::positiveNumber:
    return "X";
  case ArgKind::positiveInteger:
  case ArgKind::integer:
    return "N";
  case ArgKind::dimension:
    return "D";
  case ArgKind::choice: {
    std::vector<llvm::StringRef> names;
    for (const ArgChoice &choice : arg.choices)
      names.push_back(choice.name);
    return llvm::join(names, " | ");
  }
  case ArgKind::modulePrefix:
  case ArgKind::statePrefix:
    return "P";
  case ArgKind::mask:
    return "M";
  }
  llvm_unreachable("unknown argument kind");
}

static std::string formatValue(const ArgValue &value) {
  if (const auto *text = std::get_if<std::string>(&value))
    return *text;
  if (const auto *integer = std::get_if<int64_t>(&value))
    return std::to_string(*integer);
  // As a number is usually written: 1e-6, not %g's 1e-06.
  char text[32];
  std::snprintf(text, sizeof(text), "%g", std::get<double>(value));
  llvm::StringRef mantissa, exponent;
  std::tie(mantissa, exponent) = llvm::StringRef(text).split('e');
  exponent.consume_front("+");
  int power;
  if (exponent.empty() || exponent.getAsInteger(10, power))
    return text;
  return (mantissa + "e" + llvm::Twine(power)).str();
}

std::string attnc::describeSignature(const Builtin &builtin) {
  std::vector<std::string> named;
  for (const NamedArg &arg : builtin.namedArgs) {
    std::string text = arg.name + " = " + placeholder(arg);
    if (arg.required)
      text += " (required)";
    else if (arg.defaultValue)
      text += " (default " + formatValue(*arg.defaultValue) + ")";
    named.push_back(std::move(text));
  }
  if (named.empty())
    return builtin.usage;
  std::string last = named.back();
  named.pop_back();
  return builtin.usage + ", with " +
         (named.empty() ? last : llvm::join(named, ", ") + " and " + last);
}

/// What a value of `arg` must be, completing "... must be ".
static std::string describeKind(const NamedArg &arg) {
  switch (arg.kind) {
  case ArgKind::number:
    return "a number, such as " + arg.example;
  case ArgKind::positiveNumber:
    return "a positive number, such as " + arg.example;
  case ArgKind::positiveInteger:
    return "a positive integer, such as " + arg.example;
  case ArgKind::integer:
    return "an integer, such as " + arg.example;
  case ArgKind::dimension:
    return "a declared dim, such as 'S', or a dim's index, such as -1 for "
           "the last";
  case ArgKind::choice: {
    std::vector<std::string> names;
    for (const ArgChoice &choice : arg.choices)
      names.push_back(
          "'" + choice.name + "'" +
          (choice.meaning.empty() ? "" : " (" + choice.meaning + ")"));
    std::string last = names.back();
    names.pop_back();
    return names.empty() ? last : llvm::join(names, ", ") + " or " + last;
  }
  case ArgKind::modulePrefix:
    return "a module prefix, such as 'attn.c_attn' for the weights "
           "'attn.c_attn.weight' and 'attn.c_attn.bias'";
  case ArgKind::statePrefix:
    return "a state prefix P, whose states 'P.key' and 'P.value' are the KV "
           "cache";
  case ArgKind::mask:
    break;
  }
  llvm_unreachable("masks are checked by their builtins");
}

/// Whether `value` is of `arg`'s kind.
static bool hasKind(const Expr &value, const NamedArg &arg) {
  const auto *number = llvm::dyn_cast<NumberExpr>(&value);
  const auto *name = llvm::dyn_cast<NameExpr>(&value);
  // Numbers become f32 attributes: one that is 0 or infinite as an f32 would
  // be a surprise.
  bool finite = number && std::isfinite(float(number->value));
  switch (arg.kind) {
  case ArgKind::number:
    return finite;
  case ArgKind::positiveNumber:
    return finite && float(number->value) > 0;
  case ArgKind::positiveInteger:
    return number && number->isInteger && number->intValue >= 1;
  case ArgKind::integer:
    return number && number->isInteger;
  case ArgKind::dimension:
    return name || (number && number->isInteger);
  case ArgKind::choice:
    return name && llvm::any_of(arg.choices, [&](const ArgChoice &choice) {
             return choice.name == name->name;
           });
  case ArgKind::modulePrefix:
  case ArgKind::statePrefix:
    return name != nullptr;
  case ArgKind::mask:
    return true;
  }
  llvm_unreachable("unknown argument kind");
}

//===----------------------------------------------------------------------===//
// Sorting and checking a call's arguments
//===----------------------------------------------------------------------===//

/// Checks the named argument `arg`, not yet in `args`, against `builtin`'s
/// signature.
static bool checkNamedArg(CheckContext &ctx, const Builtin &builtin,
                          Argument &arg, CallArgs &args) {
  const NamedArg *declared = builtin.findNamedArg(arg.name);
  if (!declared) {
    std::vector<llvm::StringRef> names;
    for (const NamedArg &named : builtin.namedArgs)
      names.push_back(named.name);
    std::string msg =
        "unknown argument '" + arg.name + "' of '" + builtin.name + "'";
    if (names.empty())
      msg += "; it takes no named arguments";
    else if (std::string s = closestName(arg.name, names); !s.empty())
      msg += didYouMean(s);
    else
      msg += "; its named arguments are " + llvm::join(names, ", ");
    ctx.error(arg.nameLoc.Start, msg, arg.nameLoc);
    return false;
  }
  auto [it, inserted] = args.named.try_emplace(arg.name, &arg);
  if (!inserted) {
    ctx.error(arg.nameLoc.Start, "argument '" + arg.name + "' is given twice",
              arg.nameLoc);
    ctx.note(it->second->nameLoc.Start, "the first one is here");
    return false;
  }
  if (hasKind(*arg.value, *declared))
    return true;
  ctx.errorAt(*arg.value, "'" + arg.name + "' of '" + builtin.name +
                              "' must be " + describeKind(*declared));
  return false;
}

bool attnc::sortArgs(CheckContext &ctx, CallExpr &call, const Builtin &builtin,
                     CallArgs &args) {
  args.builtin = &builtin;
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
    ok &= checkNamedArg(ctx, builtin, arg, args);
  }
  for (const NamedArg &declared : builtin.namedArgs)
    if (declared.required && !args.named.count(declared.name)) {
      ctx.error(call.calleeLoc.Start,
                "'" + builtin.name + "' requires '" + declared.name + " = " +
                    placeholder(declared) + "' (" + declared.meaning + ")",
                call.getRange());
      ok = false;
    }
  size_t n = args.positional.size();
  if (n < builtin.minPositional || n > builtin.maxPositional) {
    std::string expected =
        builtin.minPositional == builtin.maxPositional
            ? std::to_string(builtin.minPositional)
            : std::to_string(builtin.minPositional) +
                  (builtin.maxPositional == builtin.minPositional + 1
                       ? " or "
                       : " to ") +
                  std::to_string(builtin.maxPositional);
    ctx.error(call.calleeLoc.Start,
              "'" + builtin.name + "' takes " + expected +
                  " positional argument" +
                  (builtin.maxPositional == 1 ? "" : "s") + ", got " +
                  llvm::Twine(n) + "; write " + describeSignature(builtin),
              call.getRange());
    ok = false;
  }
  return ok;
}

//===----------------------------------------------------------------------===//
// Reading the arguments
//===----------------------------------------------------------------------===//

const NamedArg &CallArgs::declaration(llvm::StringRef name) const {
  const NamedArg *declared = builtin->findNamedArg(name);
  assert(declared && "the builtin does not declare this argument");
  return *declared;
}

Argument *CallArgs::get(llvm::StringRef name) const {
  assert(builtin->findNamedArg(name) &&
         "the builtin does not declare this argument");
  return named.lookup(name);
}

double CallArgs::number(llvm::StringRef name) const {
  const NamedArg &declared = declaration(name);
  assert((declared.kind == ArgKind::number ||
          declared.kind == ArgKind::positiveNumber) &&
         "not a number argument");
  if (Argument *arg = named.lookup(name))
    return llvm::cast<NumberExpr>(*arg->value).value;
  assert(declared.defaultValue && "an argument without a default, not given");
  return std::get<double>(*declared.defaultValue);
}

int64_t CallArgs::integer(llvm::StringRef name) const {
  const NamedArg &declared = declaration(name);
  assert((declared.kind == ArgKind::positiveInteger ||
          declared.kind == ArgKind::integer) &&
         "not an integer argument");
  if (Argument *arg = named.lookup(name))
    return llvm::cast<NumberExpr>(*arg->value).intValue;
  assert(declared.defaultValue && "an argument without a default, not given");
  return std::get<int64_t>(*declared.defaultValue);
}

llvm::StringRef CallArgs::choice(llvm::StringRef name) const {
  const NamedArg &declared = declaration(name);
  assert(declared.kind == ArgKind::choice && "not a choice argument");
  if (Argument *arg = named.lookup(name))
    return llvm::cast<NameExpr>(*arg->value).name;
  assert(declared.defaultValue && "an argument without a default, not given");
  return std::get<std::string>(*declared.defaultValue);
}
