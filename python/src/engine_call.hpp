#pragma once
// One call into the engine from the interpreter. The work runs on a thread
// of its own while the interpreter's thread waits without the GIL, waking
// every 50 ms to hand the engine's progress events (the JSON-lines protocol
// of docs/protocol.md, as dicts) to a Python callable and to look for
// Ctrl-C: Python runs its signal handlers only on the main thread, between
// bytecodes, so a thread blocked in C++ would never see a KeyboardInterrupt.
// On one, the work is cancelled (the engine stops at its next unit of work)
// and, once it has stopped, the KeyboardInterrupt is raised; the
// interpreter lives on.
#include <functional>

#include <pybind11/pybind11.h>

#include "driftscan/core/cancel_token.hpp"
#include "driftscan/core/progress.hpp"

namespace driftscan::python {

// Runs `work` as above; `callback` (None: no events) receives each event.
// An exception of the work is rethrown here (Error: translated by the
// module, exceptions.hpp).
void call_engine(const std::function<void(Progress&, const CancelToken&)>& work, const pybind11::object& callback);

}  // namespace driftscan::python
