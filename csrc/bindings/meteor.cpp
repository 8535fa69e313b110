// Bindings of METEOR 1.5 (pysynth._core.metrics.meteor_resources / meteor_stats / meteor_stem).
// Glue only; the twin is pysynth/metrics/_meteor_ref.py.
#include <memory>
#include <string>

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

template <typename T>
const T* array_of(const py::dict& para, const char* key, std::vector<py::object>& keep, size_t* n) {
  if (!para.contains(key)) throw py::value_error(std::string("para: missing array '") + key + "'");
  auto a = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(para[key]);
  if (!a || a.ndim() != 1) throw py::value_error(std::string("para['") + key + "'] must be a 1-d array");
  keep.push_back(a);
  if (n) *n = static_cast<size_t>(a.shape(0));
  return a.data();
}

std::unique_ptr<MeteorHolder> make_resources(py::bytes function_words, py::bytes exceptions, py::bytes synsets,
                                             py::dict para, int max_len) {
  auto h = std::make_unique<MeteorHolder>();
  h->keep = {function_words, exceptions, synsets};
  mt::ParaArrays pa;
  size_t n_blob = 0, n_voff = 0, n_poff = 0, n_gptr = 0, n_hk = 0, n_hv = 0, n_tok = 0, n_par = 0;
  pa.vocab_blob = array_of<uint8_t>(para, "vocab_blob", h->keep, &n_blob);
  pa.vocab_off = array_of<int64_t>(para, "vocab_off", h->keep, &n_voff);
  pa.phr_tok = array_of<int32_t>(para, "phr_tok", h->keep, &n_tok);
  pa.phr_off = array_of<int64_t>(para, "phr_off", h->keep, &n_poff);
  pa.grp_ptr = array_of<int64_t>(para, "grp_ptr", h->keep, &n_gptr);
  pa.grp_par = array_of<int32_t>(para, "grp_par", h->keep, &n_par);
  pa.htab_key = array_of<uint64_t>(para, "htab_key", h->keep, &n_hk);
  pa.htab_val = array_of<int32_t>(para, "htab_val", h->keep, &n_hv);
  size_t n_pk = 0, n_pv = 0;
  pa.pfx_key = array_of<uint64_t>(para, "pfx_key", h->keep, &n_pk);
  pa.pfx_val = array_of<int32_t>(para, "pfx_val", h->keep, &n_pv);
  if (n_pk != n_pv || (n_pk & (n_pk - 1)) != 0)
    throw py::value_error("para: inconsistent prefix table; delete the cache file to rebuild it");
  pa.pfx_size = n_pk;
  size_t n_gh = 0;
  pa.grp_hash = array_of<uint64_t>(para, "grp_hash", h->keep, &n_gh);
  if (n_gh != n_par)
    throw py::value_error("para: grp_hash does not match grp_par; delete the cache file to rebuild it");
  if (n_voff < 1 || n_poff < 1 || n_gptr != n_poff || n_hk != n_hv || (n_hk & (n_hk - 1)) != 0 ||
      pa.vocab_off[n_voff - 1] != static_cast<int64_t>(n_blob) ||
      pa.phr_off[n_poff - 1] != static_cast<int64_t>(n_tok) || pa.grp_ptr[n_gptr - 1] != static_cast<int64_t>(n_par))
    throw py::value_error("para: inconsistent paraphrase cache arrays; delete the cache file to rebuild it");
  pa.n_vocab = n_voff - 1;
  pa.n_phr = n_poff - 1;
  pa.htab_size = n_hk;
  pa.max_len = max_len;
  std::string_view fw = PyBytes_AS_STRING(function_words.ptr()), ex = PyBytes_AS_STRING(exceptions.ptr()),
                   sy = PyBytes_AS_STRING(synsets.ptr());
  fw = std::string_view(fw.data(), static_cast<size_t>(PyBytes_GET_SIZE(function_words.ptr())));
  ex = std::string_view(ex.data(), static_cast<size_t>(PyBytes_GET_SIZE(exceptions.ptr())));
  sy = std::string_view(sy.data(), static_cast<size_t>(PyBytes_GET_SIZE(synsets.ptr())));
  {
    py::gil_scoped_release nogil;
    h->res = std::make_unique<mt::Resources>(fw, ex, sy, pa);
  }
  return h;
}

py::array_t<double> meteor_stats_py(const MeteorHolder& h, py::handle hyps, py::handle refs, int workers) {
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
  resolve_workers(workers);
  py::array_t<double> out({static_cast<py::ssize_t>(n), static_cast<py::ssize_t>(mt::kStats)});
  double* o = out.mutable_data();
  {
    py::gil_scoped_release nogil;
    mt::segment_stats(*h.res, hc.views, flat, off.data(), workers, o);
  }
  return out;
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
  m.def(
      "meteor_stem", [](const std::string& w) { return mt::snowball_stem(w); },
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
