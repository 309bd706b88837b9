// rog._native: rog::Worker (client/worker.h) for Python, through pybind11,
// with no torch in it. The Python package (python/rog/) does the torch
// work with torch's own operations and hands this module host float32
// buffers (any object with the buffer protocol: numpy views of torch
// tensors), which it reads and writes in place, without a copy. Because it
// links no libtorch, one build works with whatever torch the user has.
//
// Every call that can block (waiting at the staleness bound, the push,
// Flush, Sync, Close, and the destructor's join) releases the GIL, and runs
// Python's signal handlers every 50 ms while it waits (rog::Worker::
// SetInterruptCheck), so Ctrl+C raises KeyboardInterrupt at once and leaves
// the worker as a timeout would. Errors are raised as rog.errors.Error, the
// subclass of the status's code, carrying rog's message unchanged.
//
// Fork: the worker's threads exist only in the process that made it; in a
// forked child (a DataLoader's workers) every call raises, and the object
// is left alone when the child drops it.
#include <unistd.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/worker.h"
#include "common/layout.h"
#include "proto/convert.h"
#include "pybind11/pybind11.h"
#include "pybind11/stl.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

namespace py = pybind11;

namespace rog {
namespace {

// An absl::Status on its way to Python (the translator below raises it).
struct StatusError {
  absl::Status status;
};

[[noreturn]] void Raise(const absl::Status& s) {
  // A signal handler's exception (KeyboardInterrupt) wins: it ended the wait.
  if (PyErr_Occurred() != nullptr) throw py::error_already_set();
  throw StatusError{s};
}

void Check(const absl::Status& s) {
  if (PyErr_Occurred() != nullptr) throw py::error_already_set();
  if (!s.ok()) Raise(s);
}

// --- options -----------------------------------------------------------------------

// Every field of WorkerOptions Python can set, by its C++ name: all but
// `credentials` and `clock`, which are C++ objects (the tls_* files and the
// token give the credentials). rog's tests compare this list with
// client/worker.h.
struct OptionField {
  const char* name;
  std::function<py::object(const WorkerOptions&)> get;
  std::function<void(WorkerOptions&, py::handle)> set;
};

template <typename T>
OptionField Field(const char* name, T WorkerOptions::*member) {
  return OptionField{name, [member](const WorkerOptions& o) { return py::cast(o.*member); },
                     [member](WorkerOptions& o, py::handle v) { o.*member = v.cast<T>(); }};
}

// WorkerOptions::drain, as the strings "average" and "sum".
OptionField DrainField() {
  return OptionField{"drain",
                     [](const WorkerOptions& o) {
                       return py::cast(std::string(o.drain == DrainRule::kSum ? "sum" : "average"));
                     },
                     [](WorkerOptions& o, py::handle v) {
                       const std::string s = v.cast<std::string>();
                       if (s != "average" && s != "sum") {
                         Raise(absl::InvalidArgumentError(absl::StrCat(
                             "option drain='", s,
                             "' is not a drain rule; give 'average' (the default: the "
                             "final flush pushes 1/N of what a robot holds) or 'sum'")));
                       }
                       o.drain = s == "sum" ? DrainRule::kSum : DrainRule::kAverage;
                     }};
}

const std::vector<OptionField>& OptionFields() {
  static const std::vector<OptionField> fields = {
      Field("server", &WorkerOptions::server),
      Field("worker_id", &WorkerOptions::worker_id),
      Field("batch_bytes", &WorkerOptions::batch_bytes),
      Field("batch_seconds", &WorkerOptions::batch_seconds),
      Field("inflight_lead", &WorkerOptions::inflight_lead),
      Field("backoff_initial", &WorkerOptions::backoff_initial),
      Field("backoff_max", &WorkerOptions::backoff_max),
      Field("keepalive_timeout", &WorkerOptions::keepalive_timeout),
      Field("replay_buffer_bytes", &WorkerOptions::replay_buffer_bytes),
      Field("return_after_share", &WorkerOptions::return_after_share),
      Field("share_in_background", &WorkerOptions::share_in_background),
      DrainField(),
      Field("tls_ca_file", &WorkerOptions::tls_ca_file),
      Field("tls_cert_file", &WorkerOptions::tls_cert_file),
      Field("tls_key_file", &WorkerOptions::tls_key_file),
      Field("tls_server_name", &WorkerOptions::tls_server_name),
      Field("token_file", &WorkerOptions::token_file),
      Field("token", &WorkerOptions::token),
  };
  return fields;
}

// The options' defaults, as WorkerOptions declares them.
py::dict DefaultOptions() {
  const WorkerOptions defaults;
  py::dict d;
  for (const OptionField& f : OptionFields()) d[f.name] = f.get(defaults);
  return d;
}

WorkerOptions OptionsFromDict(const py::dict& given) {
  WorkerOptions o;
  for (const auto& item : given) {
    const std::string name = py::str(item.first);
    const OptionField* field = nullptr;
    for (const OptionField& f : OptionFields()) {
      if (name == f.name) field = &f;
    }
    if (field == nullptr) {
      Raise(absl::InvalidArgumentError(
          absl::StrCat("unknown option '", name, "'; rog.default_options() lists every option")));
    }
    try {
      field->set(o, item.second);
    } catch (const py::cast_error&) {
      Raise(absl::InvalidArgumentError(absl::StrCat(
          "option ", name, "=", std::string(py::repr(item.second)), " has the wrong type; ",
          "its default is ", std::string(py::repr(field->get(WorkerOptions()))))));
    }
  }
  return o;
}

// --- buffers -----------------------------------------------------------------------

// A C-contiguous float32 buffer of exactly `n` elements, as a span.
absl::Span<float> FloatBuffer(const py::buffer& b, size_t n, bool writable, const char* what) {
  py::buffer_info info = b.request(writable);
  const bool contiguous = info.ndim <= 1 || info.strides.back() == info.itemsize;
  if (info.format != py::format_descriptor<float>::format() || info.itemsize != 4 || !contiguous) {
    Raise(absl::InvalidArgumentError(absl::StrCat(
        what, ": a C-contiguous float32 buffer is needed (format '", info.format, "')")));
  }
  if (static_cast<size_t>(info.size) != n) {
    Raise(absl::InvalidArgumentError(
        absl::StrCat(what, ": the buffer has ", info.size, " elements; the model has ", n)));
  }
  return absl::MakeSpan(static_cast<float*>(info.ptr), n);
}

// --- stats -------------------------------------------------------------------------

py::dict PushDict(const PushStats& p) {
  py::dict d;
  d["iteration"] = p.iteration;
  d["age_seconds"] = p.age_seconds;
  d["window_seconds"] = p.window_seconds;
  d["bytes"] = p.bytes;
  d["payload"] = p.payload;
  d["busy_seconds"] = p.busy_seconds;
  d["overshoot_seconds"] = p.overshoot_seconds;
  d["late_bytes"] = p.late_bytes;
  d["disconnected"] = p.disconnected;
  d["ack_seconds"] = p.ack_seconds;
  d["acked_bytes"] = p.acked_bytes;
  return d;
}

py::dict StatsDict(const IterationStats& s) {
  py::dict d;
  d["iteration"] = s.iteration;
  d["stall_seconds"] = s.stall_seconds;
  d["stalled"] = s.stalled;
  d["compute_seconds"] = s.compute_seconds;
  d["transmit_seconds"] = s.transmit_seconds;
  d["window_seconds"] = s.window_seconds;
  d["rows_up"] = s.rows_up;
  d["bytes_up"] = s.bytes_up;
  d["rows_down"] = s.rows_down;
  d["bytes_down"] = s.bytes_down;
  d["payload_up"] = s.payload_up;
  d["payload_down"] = s.payload_down;
  d["uplink_goodput"] = s.uplink_goodput;
  d["rows_kept"] = s.rows_kept;
  d["disconnected"] = s.disconnected;
  d["detached_seconds"] = s.detached_seconds;
  d["detached"] = s.detached;
  py::list pushes;
  for (const PushStats& p : s.pushes) pushes.append(PushDict(p));
  d["pushes"] = pushes;
  return d;
}

py::dict StallDict(const StallInfo& s) {
  py::dict d;
  d["iteration"] = s.iteration;
  d["rows"] = s.rows;
  d["missing_rows"] = s.missing_rows;
  d["waiting_for"] = s.waiting_for;
  d["reason"] = s.reason;
  return d;
}

// --- the worker --------------------------------------------------------------------

// rog::Worker, owned by the process that made it.
class PyWorker {
 public:
  PyWorker(const py::dict& options, const std::vector<std::string>& names,
           const std::vector<std::vector<int64_t>>& shapes, uint64_t min_split_numel,
           const py::buffer& initial)
      : pid_(::getpid()) {
    if (names.size() != shapes.size()) {
      Raise(absl::InvalidArgumentError("one shape per tensor name is needed"));
    }
    std::vector<TensorSpec> specs;
    for (size_t i = 0; i < names.size(); ++i) specs.push_back(TensorSpec{names[i], shapes[i]});
    absl::StatusOr<Layout> layout = Layout::Create(std::move(specs), min_split_numel);
    if (!layout.ok()) Raise(layout.status());
    const size_t n = layout->total_numel();
    const absl::Span<float> values = FloatBuffer(initial, n, false, "initial values");
    std::vector<float> copy(values.begin(), values.end());
    WorkerOptions o = OptionsFromDict(options);
    absl::StatusOr<std::unique_ptr<Worker>> w;
    {
      py::gil_scoped_release release;
      w = Worker::Start(std::move(o), *std::move(layout), std::move(copy));
    }
    if (!w.ok()) Raise(w.status());
    worker_ = std::shared_ptr<Worker>(std::move(*w));
    worker_->SetInterruptCheck([] {
      py::gil_scoped_acquire gil;
      if (PyErr_CheckSignals() != 0) return absl::CancelledError("interrupted by a signal");
      return absl::OkStatus();
    });
  }

  ~PyWorker() {
    if (::getpid() != pid_) {
      // A forked child's copy: its threads are the parent's. Leave it.
      new std::shared_ptr<Worker>(std::move(worker_));
      return;
    }
    py::gil_scoped_release release;
    worker_.reset();
  }

  void BeginIteration(const py::buffer& params, double timeout) {
    std::shared_ptr<Worker> w = Live();
    const absl::Span<float> out = FloatBuffer(params, w->layout().total_numel(), true, "params");
    absl::Status s;
    {
      py::gil_scoped_release release;
      s = w->BeginIteration(out, timeout);
    }
    Check(s);
  }

  py::dict EndIteration(const py::buffer& update) {
    std::shared_ptr<Worker> w = Live();
    const absl::Span<float> in = FloatBuffer(update, w->layout().total_numel(), false, "update");
    absl::StatusOr<IterationStats> s;
    {
      py::gil_scoped_release release;
      s = w->EndIteration(in);
    }
    Check(s.status());
    return StatsDict(*s);
  }

  // Flush, Sync and Close: a blocking call on the worker, GIL released.
  void Blocking(absl::Status (Worker::*call)(double), double timeout) {
    std::shared_ptr<Worker> w = Live();
    absl::Status s;
    {
      py::gil_scoped_release release;
      s = ((*w).*call)(timeout);
    }
    Check(s);
  }

  void Replica(const py::buffer& out) {
    std::shared_ptr<Worker> w = Live();
    const absl::Span<float> dst = FloatBuffer(out, w->layout().total_numel(), true, "out");
    std::vector<float> r;
    {
      py::gil_scoped_release release;
      r = w->Replica();
    }
    std::memcpy(dst.data(), r.data(), r.size() * sizeof(float));
  }

  // Stops the worker now, without a goodbye (rogd keeps its state for the
  // lease, as after a crash). Later calls raise.
  void Abandon() {
    std::shared_ptr<Worker> w = Live();
    worker_.reset();
    py::gil_scoped_release release;
    w.reset();
  }

  std::shared_ptr<Worker> Live() const {
    if (::getpid() != pid_) {
      throw py::value_error(absl::StrCat(
          "this rog connection was made in process ", pid_, "; process ", ::getpid(),
          " is a fork of it and cannot use it (its threads stayed in the parent). Connect in the "
          "training process, and leave DataLoader worker processes to load data"));
    }
    if (worker_ == nullptr) Raise(absl::FailedPreconditionError("the worker is closed"));
    return worker_;
  }

 private:
  const pid_t pid_;
  std::shared_ptr<Worker> worker_;
};

void DefineWorker(py::module_& m) {
  py::class_<PyWorker>(m, "Worker")
      .def(py::init<const py::dict&, const std::vector<std::string>&,
                    const std::vector<std::vector<int64_t>>&, uint64_t, const py::buffer&>(),
           py::arg("options"), py::arg("names"), py::arg("shapes"), py::arg("min_split_numel"),
           py::arg("initial"))
      .def("begin_iteration", &PyWorker::BeginIteration, py::arg("params"), py::arg("timeout"))
      .def("end_iteration", &PyWorker::EndIteration, py::arg("update"))
      .def(
          "flush", [](PyWorker& w, double t) { w.Blocking(&Worker::Flush, t); }, py::arg("timeout"))
      .def(
          "sync", [](PyWorker& w, double t) { w.Blocking(&Worker::Sync, t); }, py::arg("timeout"))
      .def(
          "finish", [](PyWorker& w, double t) { w.Blocking(&Worker::Finish, t); },
          py::arg("timeout"))
      .def(
          "close", [](PyWorker& w, double t) { w.Blocking(&Worker::Close, t); }, py::arg("timeout"))
      .def("replica", &PyWorker::Replica, py::arg("out"))
      .def("abandon", &PyWorker::Abandon)
      .def("disconnect", [](PyWorker& w, double hold) { w.Live()->Disconnect(hold); })
      .def_property_readonly("clock", [](PyWorker& w) { return w.Live()->clock(); })
      .def_property_readonly("connected", [](PyWorker& w) { return w.Live()->connected(); })
      .def_property_readonly("reconnects", [](PyWorker& w) { return w.Live()->reconnects(); })
      .def_property_readonly("detached", [](PyWorker& w) { return w.Live()->detached(); })
      .def_property_readonly("detaches", [](PyWorker& w) { return w.Live()->detaches(); })
      .def_property_readonly("stall_seconds", [](PyWorker& w) { return w.Live()->stall_seconds(); })
      .def_property_readonly("detached_seconds",
                             [](PyWorker& w) { return w.Live()->detached_seconds(); })
      .def_property_readonly("replayed", [](PyWorker& w) { return w.Live()->replayed(); })
      .def_property_readonly("replay_dropped",
                             [](PyWorker& w) { return w.Live()->replay_dropped(); })
      .def("last_stall", [](PyWorker& w) { return StallDict(w.Live()->last_stall()); })
      .def_property_readonly("num_rows", [](PyWorker& w) { return w.Live()->layout().num_rows(); })
      .def_property_readonly("total_numel",
                             [](PyWorker& w) { return w.Live()->layout().total_numel(); })
      .def_property_readonly("fingerprint",
                             [](PyWorker& w) { return w.Live()->layout().fingerprint(); });
}

// Raises a StatusError as the rog.errors class of its code.
void TranslateStatus(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const StatusError& e) {
    py::object make = py::module_::import("rog.errors").attr("_from_status");
    py::object exc = make(static_cast<int>(e.status.code()), std::string(e.status.message()));
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
  }
}

}  // namespace
}  // namespace rog

PYBIND11_MODULE(_native, m) {
  m.doc() = "rog::Worker for Python (rog's native module; use the rog package)";
  // The SDK logs through spdlog's default logger: to stderr, as rog::Worker's
  // C++ programs do, leaving stdout to the training script.
  spdlog::set_default_logger(spdlog::stderr_color_mt("rog"));
  py::register_exception_translator(&rog::TranslateStatus);
  m.attr("__version__") = rog::kRogVersion;
  m.def("default_options", &rog::DefaultOptions,
        "every rog::WorkerOptions field Python can set, with its default");
  m.def(
      "set_log_level",
      [](const std::string& level) {
        const spdlog::level::level_enum l = spdlog::level::from_str(level);
        if (l == spdlog::level::off && level != "off") {
          rog::Raise(absl::InvalidArgumentError(absl::StrCat(
              "log level '", level, "': use trace, debug, info, warning, error or off")));
        }
        spdlog::set_level(l);
      },
      py::arg("level"));
  m.def(
      "layout_rows",
      [](const std::vector<std::string>& names, const std::vector<std::vector<int64_t>>& shapes,
         uint64_t min_split_numel) {
        std::vector<rog::TensorSpec> specs;
        for (size_t i = 0; i < names.size() && i < shapes.size(); ++i) {
          specs.push_back(rog::TensorSpec{names[i], shapes[i]});
        }
        absl::StatusOr<rog::Layout> l = rog::Layout::Create(std::move(specs), min_split_numel);
        if (!l.ok()) rog::Raise(l.status());
        return py::make_tuple(l->num_rows(), l->total_numel(), l->fingerprint());
      },
      "rows, elements and fingerprint of a layout", py::arg("names"), py::arg("shapes"),
      py::arg("min_split_numel"));
  rog::DefineWorker(m);
}
