// Bindings of METEOR 1.5 (pysynth._core.metrics.meteor_resources / meteor_stats / meteor_scores /
// meteor_stem / meteor_normalize / meteor_score_from_stats).
// Glue only; the twin is pysynth/metrics/_meteor_ref.py.
#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "common.hpp"
#include "pysynth/common.hpp"
#include "pysynth/meteor.hpp"

namespace pysynth::bind {
namespace {

namespace mt = pysynth::meteor;

// Keeps the cache arrays (memory maps) alive as long as the C++ resources point into them.
struct MeteorHolder {
  std::vector<py::object> keep;
  std::unique_ptr<mt::Resources> res;
};

// A 1-d array of T read by make_resources: its data and length (the owner is kept in MeteorHolder::keep).
template <typename T>
struct View {
  const T* data;
  size_t size;
};

template <typename T>
const char* item_name() {
  if constexpr (std::is_same_v<T, uint8_t>) return "uint8";
  if constexpr (std::is_same_v<T, int32_t>) return "int32";
  if constexpr (std::is_same_v<T, int64_t>) return "int64";
  return "uint64";
}

// para[key]: a 1-d numpy array of exactly T, or a memoryview of T (what the cache loader gives: a
// one-shot run then never imports numpy); a cast would turn a float or a wrapped-around id into an
// index silently. Found by fuzz/: the arrays were trusted, so an edited cache read out of bounds;
// make_resources now checks every index they hold.
template <typename T>
View<T> array_of(const py::dict& para, const char* key, std::vector<py::object>& keep) {
  std::string what = std::string("para['") + key + "']";
  if (!para.contains(key))
    throw py::value_error("para: missing array '" + std::string(key) + "'; delete the cache file to rebuild it");
  py::object o = para[key];
  if (PyMemoryView_Check(o.ptr())) {
    py::buffer_info info = py::reinterpret_borrow<py::buffer>(o).request();
    // the item type exactly (a '>' byte order or another width is another dtype, as for numpy arrays)
    if (!info.item_type_is_equivalent_to<T>())
      throw py::type_error(what + " must be a memoryview of " + item_name<T>() + " items, got format '" + info.format +
                           "'");
    if (info.ndim != 1) throw py::value_error(what + " must be a 1-d array");
    py::object owner = o;
    if (info.shape[0] > 1 && info.strides[0] != static_cast<py::ssize_t>(sizeof(T))) {
      std::string bytes(static_cast<size_t>(info.shape[0]) * sizeof(T), '\0');  // a strided view: one copy
      for (py::ssize_t i = 0; i < info.shape[0]; ++i)
        std::memcpy(&bytes[static_cast<size_t>(i) * sizeof(T)],
                    static_cast<const char*>(info.ptr) + i * info.strides[0], sizeof(T));
      owner = py::bytes(bytes);
      keep.push_back(owner);
      return {reinterpret_cast<const T*>(PyBytes_AS_STRING(owner.ptr())), static_cast<size_t>(info.shape[0])};
    }
    keep.push_back(owner);
    return {static_cast<const T*>(info.ptr), static_cast<size_t>(info.shape[0])};
  }
  if (!py::isinstance<py::array>(o) || !py::array(o).dtype().equal(py::dtype::of<T>()))
    throw py::type_error(
        what + " must be a numpy array of dtype " + std::string(py::str(py::dtype::of<T>())) + ", got " +
        std::string(py::repr(py::isinstance<py::array>(o) ? py::object(py::array(o).dtype()) : py::type::of(o))));
  if (py::array(o).ndim() != 1) throw py::value_error(what + " must be a 1-d array");
  auto a = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(o);  // a copy only if strided
  keep.push_back(a);
  return {a.data(), static_cast<size_t>(a.size())};
}

// Offsets of a ragged array over n items: start at 0, never decrease, end at n.
bool offsets_ok(const int64_t* o, size_t len, size_t n) {
  if (len < 1 || o[0] != 0 || o[len - 1] != static_cast<int64_t>(n)) return false;
  for (size_t i = 1; i < len; ++i)
    if (o[i] < o[i - 1]) return false;
  return true;
}

// An open-addressing table (size a power of two or 0) whose probes end: an empty (< 0) slot.
bool table_ok(const int32_t* val, size_t n) {
  if (n == 0) return true;
  if ((n & (n - 1)) != 0) return false;
  for (size_t i = 0; i < n; ++i)
    if (val[i] < 0) return true;
  return false;
}

std::unique_ptr<MeteorHolder> make_resources(py::bytes function_words, py::bytes exceptions, py::bytes synsets,
                                             py::dict para, py::handle max_len_obj) {
  const int max_len = static_cast<int>(to_int(max_len_obj, "max_len", 0, std::numeric_limits<int>::max()));
  auto h = std::make_unique<MeteorHolder>();
  h->keep = {function_words, exceptions, synsets};
  auto vocab_blob = array_of<uint8_t>(para, "vocab_blob", h->keep);
  auto vocab_off = array_of<int64_t>(para, "vocab_off", h->keep);
  auto phr_tok = array_of<int32_t>(para, "phr_tok", h->keep);
  auto phr_off = array_of<int64_t>(para, "phr_off", h->keep);
  auto grp_ptr = array_of<int64_t>(para, "grp_ptr", h->keep);
  auto grp_par = array_of<int32_t>(para, "grp_par", h->keep);
  auto htab_key = array_of<uint64_t>(para, "htab_key", h->keep);
  auto htab_val = array_of<int32_t>(para, "htab_val", h->keep);
  auto pfx_key = array_of<uint64_t>(para, "pfx_key", h->keep);
  auto pfx_val = array_of<int32_t>(para, "pfx_val", h->keep);
  auto grp_hash = array_of<uint64_t>(para, "grp_hash", h->keep);
  mt::ParaArrays pa;
  pa.vocab_blob = vocab_blob.data;
  pa.vocab_off = vocab_off.data;
  pa.phr_tok = phr_tok.data;
  pa.phr_off = phr_off.data;
  pa.grp_ptr = grp_ptr.data;
  pa.grp_par = grp_par.data;
  pa.htab_key = htab_key.data;
  pa.htab_val = htab_val.data;
  pa.pfx_key = pfx_key.data;
  pa.pfx_val = pfx_val.data;
  pa.grp_hash = grp_hash.data;
  const size_t n_blob = vocab_blob.size, n_voff = vocab_off.size, n_tok = phr_tok.size, n_poff = phr_off.size,
               n_gptr = grp_ptr.size, n_par = grp_par.size, n_gh = grp_hash.size, n_hk = htab_key.size,
               n_hv = htab_val.size, n_pk = pfx_key.size, n_pv = pfx_val.size;
  const char* bad = nullptr;
  {
    // Every index the matcher follows is checked once here (O(size), ~20 ms on the full table).
    py::gil_scoped_release nogil;
    if (!offsets_ok(pa.vocab_off, n_voff, n_blob))
      bad = "vocab_off must start at 0, never decrease and end at len(vocab_blob)";
    else if (!offsets_ok(pa.phr_off, n_poff, n_tok))
      bad = "phr_off must start at 0, never decrease and end at len(phr_tok)";
    else if (n_gptr != n_poff || !offsets_ok(pa.grp_ptr, n_poff, n_par))
      bad = "grp_ptr must have len(phr_off) entries, start at 0, never decrease and end at len(grp_par)";
    else if (n_gh != n_par)
      bad = "grp_hash does not match grp_par";
    else if (n_hv != n_hk || !table_ok(pa.htab_val, n_hk))
      bad = "inconsistent phrase table (htab_key/htab_val)";
    else if (n_pv != n_pk || !table_ok(pa.pfx_val, n_pk))
      bad = "inconsistent prefix table (pfx_key/pfx_val)";
    const int64_t n_phr = static_cast<int64_t>(n_poff) - 1;
    for (size_t i = 0; !bad && i < n_par; ++i)
      if (pa.grp_par[i] < 0 || pa.grp_par[i] >= n_phr) bad = "grp_par holds a phrase id out of range";
    for (size_t i = 0; !bad && i < n_hk; ++i)
      if (pa.htab_val[i] >= n_phr) bad = "htab_val holds a phrase id out of range";
  }
  if (bad) throw py::value_error(std::string("para: ") + bad + "; delete the cache file to rebuild it");
  pa.n_vocab = n_voff - 1;
  pa.n_phr = n_poff - 1;
  pa.htab_size = n_hk;
  pa.pfx_size = n_pk;
  pa.max_len = max_len;
  auto view = [](const py::bytes& b) {
    return std::string_view(PyBytes_AS_STRING(b.ptr()), static_cast<size_t>(PyBytes_GET_SIZE(b.ptr())));
  };
  {
    py::gil_scoped_release nogil;
    h->res = std::make_unique<mt::Resources>(view(function_words), view(exceptions), view(synsets), pa);
  }
  return h;
}

// The statistics (n x kStats, row-major) of hyps[i] against refs[i] (the intake of meteor_stats and
// meteor_scores); returns n.
size_t stats_of(const MeteorHolder& h, py::handle hyps, py::handle refs, py::handle workers_obj,
                std::vector<double>& out) {
  Column hc = to_strings(hyps, "hyps");
  if (PyUnicode_Check(refs.ptr()) || !PySequence_Check(refs.ptr()))
    throw py::type_error("refs must be a sequence of lists of str (the references of each hypothesis)");
  py::sequence rs = py::reinterpret_borrow<py::sequence>(refs);
  size_t n = hc.views.size();
  if (static_cast<size_t>(py::len(rs)) != n)
    throw py::value_error("refs: " + std::to_string(py::len(rs)) + " entries but hyps has " + std::to_string(n));
  std::vector<Column> rcols;
  rcols.reserve(n);
  std::vector<std::string_view> flat;
  std::vector<int64_t> off{0};
  for (size_t i = 0; i < n; ++i) {
    std::string name = "refs[" + std::to_string(i) + "]";
    rcols.push_back(to_strings(rs[i], name.c_str()));
    for (auto v : rcols.back().views) flat.push_back(v);
    off.push_back(static_cast<int64_t>(flat.size()));
  }
  const int workers = to_workers(workers_obj);
  out.assign(n * mt::kStats, 0.0);
  {
    py::gil_scoped_release nogil;
    mt::segment_stats(*h.res, hc.views, flat, off.data(), workers, out.data());
  }
  return n;
}

py::array_t<double> meteor_stats_py(const MeteorHolder& h, py::handle hyps, py::handle refs, py::handle workers_obj) {
  std::vector<double> st;
  const size_t n = stats_of(h, hyps, refs, workers_obj, st);
  py::array_t<double> out({static_cast<py::ssize_t>(n), static_cast<py::ssize_t>(mt::kStats)});
  if (n) std::memcpy(out.mutable_data(), st.data(), st.size() * sizeof(double));
  return out;
}

// Each segment's score and the corpus score (the jar's EVAL: summed statistics, where a perfectly
// matched segment adds no chunk), as Python floats: no numpy array on a one-shot run.
py::tuple meteor_scores_py(const MeteorHolder& h, py::handle hyps, py::handle refs, py::handle workers_obj) {
  std::vector<double> st;
  const size_t n = stats_of(h, hyps, refs, workers_obj, st);
  py::list seg(n);
  double tot[mt::kStats] = {};
  for (size_t i = 0; i < n; ++i) {
    const double* r = st.data() + i * mt::kStats;
    seg[i] = py::float_(mt::score_from_stats(r));
    const double ttot = (r[4] + r[5] + r[6] + r[7]) + (r[12] + r[13] + r[14] + r[15]);
    const double rtot = (r[8] + r[9] + r[10] + r[11]) + (r[16] + r[17] + r[18] + r[19]);
    const bool perfect = ttot == r[0] && rtot == r[1] && r[20] == 1;
    for (int j = 0; j < mt::kStats; ++j)
      if (j != 20 || !perfect) tot[j] += r[j];
  }
  return py::make_tuple(seg, n ? mt::score_from_stats(tot) : 0.0);
}

// nbp: {prefix: 1 or 2}, checked in the twin's order (key type, value type, value, Unicode).
std::unordered_map<std::string, int> to_nbp(py::handle obj) {
  if (!PyDict_Check(obj.ptr()))
    throw py::type_error(std::string("nbp must be a dict of nonbreaking prefixes (str -> 1 or 2), got ") +
                         Py_TYPE(obj.ptr())->tp_name);
  std::unordered_map<std::string, int> out;
  PyObject *k = nullptr, *v = nullptr;
  Py_ssize_t pos = 0;
  while (PyDict_Next(obj.ptr(), &pos, &k, &v)) {
    if (!PyUnicode_Check(k)) throw py::type_error(std::string("nbp keys must be str, got ") + Py_TYPE(k)->tp_name);
    if (!PyLong_Check(v) || PyBool_Check(v))
      throw py::type_error(std::string("nbp values must be int (1 or 2), got ") + Py_TYPE(v)->tp_name);
    int overflow = 0;
    long x = PyLong_AsLongAndOverflow(v, &overflow);
    if (overflow || (x != 1 && x != 2))
      throw py::value_error("nbp values must be 1 (any context) or 2 (before a number only)");
    Py_ssize_t len = 0;
    const char* p = PyUnicode_AsUTF8AndSize(k, &len);
    if (!p) {
      PyErr_Clear();
      throw py::value_error("nbp: a key is not valid Unicode (lone surrogate)");
    }
    out[std::string(p, static_cast<size_t>(len))] = static_cast<int>(x);
  }
  return out;
}

py::list meteor_normalize_py(py::handle texts, py::handle nbp_obj) {
  Column tc = to_strings(texts, "texts");
  auto nbp = to_nbp(nbp_obj);
  const size_t n = tc.views.size();
  std::vector<std::string> out(n);
  std::vector<char> ok(n, 0);
  {
    py::gil_scoped_release nogil;
    for (size_t i = 0; i < n; ++i) ok[i] = mt::normalize_ascii(tc.views[i], nbp, out[i]);
  }
  py::list res(n);
  for (size_t i = 0; i < n; ++i) res[i] = ok[i] ? py::object(py::str(out[i])) : py::object(py::none());
  return res;
}

}  // namespace

void register_meteor(py::module_& m) {
  // Opaque to Python (an underscore name): made by meteor_resources, passed to meteor_stats.
  py::class_<MeteorHolder>(m, "_MeteorResources");
  m.def("meteor_resources", &make_resources,
        "METEOR 1.5 resources: the jar's function words and WordNet files (bytes) and the paraphrase cache's "
        "arrays; see pysynth.metrics._meteor_ref.meteor_resources",
        py::arg("function_words"), py::arg("exceptions"), py::arg("synsets"), py::arg("para"), py::arg("max_len"));
  m.def("meteor_stats", &meteor_stats_py,
        "Sufficient statistics (n x 23) of normalized segments; see pysynth.metrics._meteor_ref.meteor_stats",
        py::arg("res"), py::arg("hyps"), py::arg("refs"), py::arg("workers") = 1);
  m.def("meteor_scores", &meteor_scores_py,
        "(segment scores, corpus score) of normalized segments: the jar's computeMetrics of each segment's "
        "statistics and of their sum; see pysynth.metrics._meteor_ref.meteor_scores",
        py::arg("res"), py::arg("hyps"), py::arg("refs"), py::arg("workers") = 1);
  m.def("meteor_normalize", &meteor_normalize_py,
        "The jar's -norm of each ASCII text (None for the others); see "
        "pysynth.metrics._meteor_ref.meteor_normalize",
        py::arg("texts"), py::arg("nbp"));
  m.def(
      "meteor_stem",
      [](py::handle w) {
        // str only (pybind11's std::string caster also took bytes, and refused a lone surrogate
        // with a TypeError); the twin checks the same way
        if (!PyUnicode_Check(w.ptr()))
          throw py::type_error(std::string("word must be str, got ") + Py_TYPE(w.ptr())->tp_name);
        Py_ssize_t len = 0;
        const char* p = PyUnicode_AsUTF8AndSize(w.ptr(), &len);
        if (!p) {
          PyErr_Clear();
          throw py::value_error("word is not valid Unicode (lone surrogate); clean the text first");
        }
        return mt::snowball_stem(std::string_view(p, static_cast<size_t>(len)));
      },
      "Snowball English stem (see pysynth.metrics._meteor_ref.stem)", py::arg("word"));
  m.def(
      "meteor_score_from_stats",
      [](py::array_t<double, py::array::c_style | py::array::forcecast> st) {
        if (st.ndim() != 1 || st.shape(0) != mt::kStats) throw py::value_error("stats must be a vector of 23");
        return mt::score_from_stats(st.data());
      },
      "The jar's computeMetrics (see pysynth.metrics._meteor_ref.score_from_stats)", py::arg("st"));
}

}  // namespace pysynth::bind
