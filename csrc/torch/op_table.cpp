// op_table.cpp -- which ops count and where their arguments are (see
// mfu_torch.h). The built-in rows come from Python
// (mfu_tracker/_dispatch_counter.py: OP_TABLE, the one source of truth that
// the TorchDispatchMode fallback uses too); custom formulas are added by
// register_flop_formula.
#include "mfu_torch.h"

#include <atomic>
#include <cstring>
#include <vector>

namespace mfu_torch {
namespace {

using Table = std::unordered_map<std::string, OpSpec>;

// The built-in table, loaded once from Python (load_builtins) before any
// count starts; read-only afterwards.
std::mutex g_builtin_mutex;
Table g_builtins;

const Table &builtins() { return g_builtins; }

// Custom formulas: written under the GIL (register/unregister), read by the
// observer under g_custom_mutex. The generation invalidates thread caches.
std::mutex g_custom_mutex;
Table g_custom;
// Unregistered entries, kept alive: an observer on another thread may still
// use the spec it looked up before the erase (extract keeps its address).
std::vector<Table::node_type> g_retired;
std::atomic<uint64_t> g_generation{1};

const OpSpec kNone{};

struct Cache {
  uint64_t generation = 0;
  std::unordered_map<const char *, const OpSpec *> by_ptr;
};

} // namespace

const OpSpec &classify(const char *name) {
  thread_local Cache cache;
  const uint64_t gen = g_generation.load(std::memory_order_acquire);
  if (cache.generation != gen) {
    cache.by_ptr.clear();
    cache.generation = gen;
  }
  auto hit = cache.by_ptr.find(name);
  if (hit != cache.by_ptr.end())
    return *hit->second;

  const OpSpec *spec = &kNone;
  const std::string key(name);
  const Table &table = builtins();
  auto found = table.find(key);
  if (found != table.end()) {
    spec = &found->second;
  } else {
    std::lock_guard<std::mutex> lock(g_custom_mutex);
    auto custom = g_custom.find(key);
    // NB: the pointer stays valid until the next (un)registration, which
    // bumps the generation and so empties every cache before its next use.
    if (custom != g_custom.end())
      spec = &custom->second;
  }
  // Only RecordFunction names of operators have stable pointers; names of
  // user scopes may be temporaries, so cache only what the table knows or
  // names that look like ops ("ns::op").
  if (spec != &kNone || std::strstr(name, "::") != nullptr)
    cache.by_ptr.emplace(name, spec);
  return *spec;
}

void load_builtins(std::vector<std::pair<std::string, OpSpec>> rows) {
  std::lock_guard<std::mutex> lock(g_builtin_mutex);
  g_builtins.clear();
  for (auto &row : rows)
    g_builtins[row.first] = row.second;
  g_generation.fetch_add(1, std::memory_order_acq_rel);
}

bool is_builtin(const std::string &name) {
  return builtins().count(name) != 0;
}

std::vector<std::string> builtin_names() {
  std::vector<std::string> names;
  for (const auto &kv : builtins())
    names.push_back(kv.first);
  return names;
}

int register_custom(const std::string &name, PyObject *fn) {
  if (is_builtin(name)) {
    PyErr_Format(PyExc_ValueError,
                 "register_flop_formula: %s already has a built-in formula",
                 name.c_str());
    return -1;
  }
  std::lock_guard<std::mutex> lock(g_custom_mutex);
  if (g_custom.count(name) != 0) {
    PyErr_Format(PyExc_ValueError,
                 "register_flop_formula: %s already has a registered formula "
                 "(unregister it first)",
                 name.c_str());
    return -1;
  }
  OpSpec spec;
  spec.kind = OpKind::Custom;
  Py_INCREF(fn);
  spec.custom = fn;
  g_custom.emplace(name, spec);
  g_generation.fetch_add(1, std::memory_order_acq_rel);
  return 0;
}

int unregister_custom(const std::string &name) {
  {
    std::lock_guard<std::mutex> lock(g_custom_mutex);
    auto found = g_custom.find(name);
    if (found == g_custom.end()) {
      PyErr_Format(PyExc_KeyError, "no registered flop formula for %s",
                   name.c_str());
      return -1;
    }
    g_retired.push_back(g_custom.extract(found));
    g_generation.fetch_add(1, std::memory_order_acq_rel);
  }
  // NB: the spec and its callable stay alive in g_retired (a bounded cost:
  // one entry per unregistration) for observers still holding them.
  return 0;
}

} // namespace mfu_torch
