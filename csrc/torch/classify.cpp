// classify.cpp -- which ops count (see mfu_torch.h): a row of the core's op
// table, or a custom formula of _C's registry, looked up once per name and
// thread.
#include "mfu_torch.h"

#include <cstring>

namespace mfu_torch {
namespace {

// Per thread: name pointer -> spec, valid for one registry generation.
struct Cache {
  uint64_t generation = 0;
  std::unordered_map<const char *, OpSpec> by_ptr;
};

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

} // namespace

const OpSpec &classify(const char *name) {
  static const OpSpec kNone{};
  thread_local Cache cache;
  const mfu_ops_api &api = ops();
  const uint64_t generation = api.formulas.generation(api.formulas.registry);
  if (cache.generation != generation) {
    cache.by_ptr.clear();
    cache.generation = generation;
  }
  auto hit = cache.by_ptr.find(name);
  if (hit != cache.by_ptr.end())
    return hit->second;
  OpSpec spec = lookup(name);
  // Only RecordFunction names of operators have stable pointers; names of
  // user scopes may be temporaries, so cache only what counts or names that
  // look like ops ("ns::op").
  if (spec.counted() || std::strstr(name, "::") != nullptr)
    return cache.by_ptr.emplace(name, spec).first->second;
  return kNone;
}

} // namespace mfu_torch
