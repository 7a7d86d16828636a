// classify.cpp -- which ops count (see mfu_torch.h): a row of the core's op
// table, or a custom formula of _C's registry, looked up once per operator
// and thread.
#include "mfu_torch.h"

namespace mfu_torch {
namespace {

// Per thread: operator -> spec, valid for one registry generation. The key
// is the address of the operator's name in its dispatcher entry (stable
// while the operator is registered).
struct Cache {
  uint64_t generation = 0;
  std::unordered_map<const void *, OpSpec> by_op;
};

} // namespace

OpSpec lookup(const char *name) {
  const mfu_ops_api &api = ops();
  OpSpec spec;
  spec.row = api.core.find(name);
  if (spec.row != nullptr) {
    spec.ninputs = api.core.inputs(spec.row, spec.inputs);
  } else {
    // NB: the formula stays valid after an unregistration (the registry
    // keeps it), and that bumps the generation, emptying every cache
    // before its next use.
    spec.formula = api.formulas.find(api.formulas.registry, name);
  }
  return spec;
}

const OpSpec &classify(const c10::OperatorHandle &op) {
  thread_local Cache cache;
  const mfu_ops_api &api = ops();
  const uint64_t generation = api.formulas.generation(api.formulas.registry);
  if (cache.generation != generation) {
    cache.by_op.clear();
    cache.generation = generation;
  }
  const c10::OperatorName &name = op.operator_name();
  auto hit = cache.by_op.find(&name);
  if (hit != cache.by_op.end())
    return hit->second;
  return cache.by_op.emplace(&name, lookup(name.name.c_str())).first->second;
}

} // namespace mfu_torch
