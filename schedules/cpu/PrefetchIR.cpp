//===- schedules/cpu/PrefetchIR.cpp - prefetches in lowered loops ---------===//
#include "schedules/cpu/PrefetchIR.h"

using namespace Halide;
using namespace Halide::Internal;

namespace attnc::schedules {
namespace {

/// llvm.prefetch's operands: a read, locality 2 (prefetcht1 on x86), the
/// data cache.
constexpr int kRead = 0, kLocality = 2, kDataCache = 1;

class FindDenseLoads : public IRVisitor {
public:
  explicit FindDenseLoads(const std::string &buffer) : buffer(buffer) {}
  std::optional<DenseLoads> loads;
  bool valid = true;

private:
  using IRVisitor::visit;
  void visit(const Load *op) override {
    IRVisitor::visit(op);
    if (op->name != buffer)
      return;
    Expr base = op->index;
    int lanes = 1;
    if (const Ramp *r = op->index.as<Ramp>()) {
      if (!is_const_one(r->stride)) {
        valid = false;
        return;
      }
      base = r->base;
      lanes = r->lanes;
    }
    if (!loads) {
      loads = DenseLoads{base, op->type.element_of(), 0, lanes};
      return;
    }
    std::optional<int64_t> offset = as_const_int(simplify(base - loads->base));
    if (!offset) {
      valid = false;
      return;
    }
    loads->first = std::min(loads->first, *offset);
    loads->end = std::max(loads->end, *offset + lanes);
  }
  const std::string &buffer;
};

/// The names a statement defines (lets and loops) inside itself.
class DefinedNames : public IRVisitor {
public:
  Scope<> names;

private:
  using IRVisitor::visit;
  void visit(const LetStmt *op) override {
    names.push(op->name);
    IRVisitor::visit(op);
  }
  void visit(const Let *op) override {
    names.push(op->name);
    IRVisitor::visit(op);
  }
  void visit(const For *op) override {
    names.push(op->name);
    IRVisitor::visit(op);
  }
};

std::string hostName(const std::string &buffer) {
  return buffer + ".prefetch_host";
}

} // namespace

int32_t DenseLoads::lineElements() const {
  return kCacheLineBytes / element.bytes();
}

int32_t DenseLoads::lines() const {
  return int32_t(((end - first) * element.bytes() + kCacheLineBytes - 1) /
                 kCacheLineBytes);
}

std::optional<DenseLoads> denseLoads(const Stmt &body,
                                     const std::string &buffer) {
  FindDenseLoads find(buffer);
  body.accept(&find);
  if (!find.valid)
    return std::nullopt;
  return find.loads;
}

bool usesInnerNames(const Expr &e, const Stmt &body) {
  DefinedNames inner;
  body.accept(&inner);
  return expr_uses_vars(e, inner.names);
}

Expr withLeadingLets(Expr e, Stmt body) {
  std::vector<const LetStmt *> lets;
  while (const LetStmt *let = body.as<LetStmt>()) {
    lets.push_back(let);
    body = let->body;
  }
  // The innermost first: its value may use the lets outside it.
  for (auto let = lets.rbegin(); let != lets.rend(); ++let)
    e = substitute((*let)->name, (*let)->value, e);
  return e;
}

Stmt prefetchL2(const std::string &buffer, Type element, Expr index) {
  Expr address =
      reinterpret(Handle(), Variable::make(Int(64), hostName(buffer)) +
                                cast(Int(64), index) * element.bytes());
  return Evaluate::make(Call::make(Int(32), "llvm.prefetch.p0",
                                   {address, kRead, kLocality, kDataCache},
                                   Call::Extern));
}

Stmt withPrefetchHost(const std::string &buffer, Stmt s) {
  Expr hostBits = reinterpret(
      Int(64),
      Call::make(Handle(), Call::buffer_get_host,
                 {Variable::make(Handle(), buffer + ".buffer")}, Call::Extern));
  return LetStmt::make(hostName(buffer), hostBits, std::move(s));
}

} // namespace attnc::schedules
