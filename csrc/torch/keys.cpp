// keys.cpp -- the borrowed dispatch keys, checked (docs/dispatch_keys.md):
// every kernel this extension registers carries one debug text, so a
// kernel another library registered later on the same key and operator
// (which the dispatcher lets override ours, with only a printed warning) is
// found by its registration's text.
#include "mfu_torch.h"

#include <ATen/core/dispatch/Dispatcher.h>

namespace mfu_torch {

const char *const kRegisteredBy = "mfu_tracker._torch";

std::string first_foreign(const std::vector<c10::OperatorHandle> &handles, c10::DispatchKey key) {
  for (const c10::OperatorHandle &op : handles) {
    std::string debug;
    try {
      debug = op.getComputedKernelForDispatchKey(key).debug();
    } catch (const std::exception &e) {
      debug = one_line(e); // no kernel at all on the key: not ours either
    }
    if (debug.find(kRegisteredBy) == std::string::npos) {
      const c10::OperatorName &name = op.operator_name();
      std::string out = name.name;
      if (!name.overload_name.empty())
        out += "." + name.overload_name;
      return out + " (" + debug + ")";
    }
  }
  return std::string();
}

} // namespace mfu_torch
