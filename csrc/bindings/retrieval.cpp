// pybind11 glue for pysynth::retrieval -> pysynth._core.retrieval (self-registered).
// Glue only: convert and size-check arrays, release the GIL, call the library, wrap results.
// The docstrings are the Python twin's (pysynth/retrieval/_reference.py).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "pysynth/common.hpp"
#include "pysynth/index.hpp"
#include "pysynth/sdm.hpp"
#include "registry.hpp"

namespace py = pybind11;
using namespace pysynth::retrieval;

namespace {

template <class T>
using Arr = py::array_t<T, py::array::c_style | py::array::forcecast>;

// A std::vector handed to numpy without a copy (the capsule owns it).
template <class T>
py::array_t<T> to_numpy(std::vector<T>&& v) {
  auto* owned = new std::vector<T>(std::move(v));
  py::capsule owner(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>({static_cast<py::ssize_t>(owned->size())}, {static_cast<py::ssize_t>(sizeof(T))}, owned->data(),
                        owner);
}

// The index arrays of a dict, checked for dtype (exact: a memory-mapped file must not be copied
// silently), contiguity and mutual sizes. `keep` holds references for the duration of the call.
struct IndexArg {
  std::vector<py::array> keep;
  IndexView view;
  std::shared_ptr<SearchCache> cache;  // this index's, when it is remembered (read-only arrays)
};

template <class T>
const T* get(const py::dict& d, const char* name, IndexArg& out, py::ssize_t* n) {
  if (!d.contains(name)) throw py::value_error(std::string("index: array '") + name + "' is missing");
  py::object o = d[name];
  if (!py::isinstance<py::array>(o)) throw py::value_error(std::string("index: ") + name + " must be a numpy array");
  py::array a = o.cast<py::array>();
  if (!a.dtype().is(py::dtype::of<T>()) || a.ndim() != 1 || !(a.flags() & py::array::c_style))
    throw py::value_error(std::string("index: ") + name + " must be a contiguous 1-D " +
                          std::string(py::str(py::dtype::of<T>())) + " array, got " + std::string(py::str(a.dtype())) +
                          " with " + std::to_string(a.ndim()) + " dims");
  *n = a.shape(0);
  out.keep.push_back(a);
  return static_cast<const T*>(a.data());
}

IndexArg index_arg(const py::object& obj) {
  if (!py::isinstance<py::dict>(obj) && !py::isinstance(obj, py::module_::import("types").attr("MappingProxyType")))
    throw py::type_error("index must be a dict of numpy arrays (Index.arrays)");
  py::dict d = py::dict(obj);
  IndexArg ia;
  IndexView& v = ia.view;
  py::ssize_t n_indptr, n_doc_ids, n_tfs, n_pos_indptr, n_positions, n_doc_offsets, n_doc_tokens, n_doc_lengths, n_cf,
      n_max_tf, n_impact, n_hi_indptr, n_hi_doc_ids, n_hi_tfs, n_pair_terms, n_cf_od, n_cf_uw, n_max_od, n_max_uw;
  v.indptr = get<std::int64_t>(d, "indptr", ia, &n_indptr);
  v.doc_ids = get<std::int32_t>(d, "doc_ids", ia, &n_doc_ids);
  v.tfs = get<std::int32_t>(d, "tfs", ia, &n_tfs);
  v.pos_indptr = get<std::int64_t>(d, "pos_indptr", ia, &n_pos_indptr);
  v.positions = get<std::int32_t>(d, "positions", ia, &n_positions);
  v.doc_offsets = get<std::int64_t>(d, "doc_offsets", ia, &n_doc_offsets);
  v.doc_tokens = get<std::int32_t>(d, "doc_tokens", ia, &n_doc_tokens);
  v.doc_lengths = get<std::int32_t>(d, "doc_lengths", ia, &n_doc_lengths);
  v.cf = get<std::int64_t>(d, "cf", ia, &n_cf);
  v.max_tf = get<std::int32_t>(d, "max_tf", ia, &n_max_tf);
  v.impact = get<std::int32_t>(d, "impact", ia, &n_impact);
  v.hi_indptr = get<std::int64_t>(d, "hi_indptr", ia, &n_hi_indptr);
  v.hi_doc_ids = get<std::int32_t>(d, "hi_doc_ids", ia, &n_hi_doc_ids);
  v.hi_tfs = get<std::int32_t>(d, "hi_tfs", ia, &n_hi_tfs);
  v.n_hi = n_hi_doc_ids;
  v.pair_terms = get<std::int32_t>(d, "pair_terms", ia, &n_pair_terms);
  v.pair_cf_od = get<std::int64_t>(d, "pair_cf_od", ia, &n_cf_od);
  v.pair_cf_uw = get<std::int64_t>(d, "pair_cf_uw", ia, &n_cf_uw);
  v.pair_max_od = get<std::int32_t>(d, "pair_max_od", ia, &n_max_od);
  v.pair_max_uw = get<std::int32_t>(d, "pair_max_uw", ia, &n_max_uw);
  v.n_pair_terms = n_pair_terms;
  v.vocab_size = n_cf;
  v.n_docs = n_doc_lengths;
  v.n_postings = n_doc_ids;
  v.n_tokens = n_positions;
  const std::pair<const char*, std::pair<py::ssize_t, py::ssize_t>> expect[] = {
      {"indptr", {n_indptr, n_cf + 1}},
      {"tfs", {n_tfs, n_doc_ids}},
      {"pos_indptr", {n_pos_indptr, n_doc_ids + 1}},
      {"doc_offsets", {n_doc_offsets, n_doc_lengths + 1}},
      {"doc_tokens", {n_doc_tokens, n_positions}},
      {"max_tf", {n_max_tf, n_cf}},
      {"impact", {n_impact, n_doc_ids}},
      {"hi_indptr", {n_hi_indptr, n_cf + 1}},
      {"hi_tfs", {n_hi_tfs, n_hi_doc_ids}},
      {"pair_cf_od", {n_cf_od, n_pair_terms * n_pair_terms}},
      {"pair_cf_uw", {n_cf_uw, n_pair_terms * n_pair_terms}},
      {"pair_max_od", {n_max_od, n_pair_terms * n_pair_terms}},
      {"pair_max_uw", {n_max_uw, n_pair_terms * n_pair_terms}},
  };
  for (const auto& e : expect)
    if (e.second.first != e.second.second)
      throw py::value_error(std::string("index: ") + e.first + " has " + std::to_string(e.second.first) +
                            " entries, expected " + std::to_string(e.second.second));
  return ia;
}

// search, target_ranks and window_stats trust nothing: an index dict that did not come from
// build_index could hold a negative doc id or a position past its document, which the kernels
// would follow out of bounds ("double free", issue 17). So they validate it first, unless this
// very index was validated before: validate_index takes 30 ms on a 200k-question index and a
// one-query search 0.26 ms (measured 2026-11-25, 2-core VM). Remembered are only indexes whose
// arrays are all read-only (Index makes them so), by the arrays' identities, with weak references:
// while an entry's arrays are alive no other object can have their ids. Each remembered index
// also gets its SearchCache (sdm.hpp: pair statistics, od lists, rank maps kept across calls),
// released as soon as one of its arrays is (weak reference callback).
// Entries: (key, weak references, capsule of a std::shared_ptr<SearchCache>).
py::list& validated_cache() {
  static py::list* cache = new py::list();  // leaked on purpose: lives as long as the module
  return *cache;
}

// At most this many bytes per index's SearchCache (at most kRemembered indexes).
constexpr std::size_t kSearchCacheBytes = std::size_t{128} << 20;
constexpr py::ssize_t kRemembered = 16;

bool entry_alive(const py::handle& entry) {
  for (auto ref : entry.cast<py::tuple>()[1].cast<py::list>())
    if (ref().is_none()) return false;
  return true;
}

// Drop the entries of indexes whose arrays are gone (and their caches with them).
void forget_dead() {
  py::list& reg = validated_cache();
  for (py::ssize_t i = static_cast<py::ssize_t>(py::len(reg)) - 1; i >= 0; --i)
    if (!entry_alive(reg[static_cast<std::size_t>(i)])) reg.attr("pop")(i);
}

std::shared_ptr<SearchCache> cache_of(const py::handle& entry) {
  auto cap = entry.cast<py::tuple>()[2].cast<py::capsule>();
  return *static_cast<std::shared_ptr<SearchCache>*>(cap.get_pointer());
}

// index_arg + validate_index, skipped for an index remembered as validated (see above).
IndexArg checked_index(const py::object& obj, int workers) {
  IndexArg ia = index_arg(obj);
  py::tuple key(ia.keep.size());
  bool readonly = true;
  for (std::size_t i = 0; i < ia.keep.size(); ++i) {
    key[i] = py::int_(reinterpret_cast<std::uintptr_t>(ia.keep[i].ptr()));
    readonly = readonly && !ia.keep[i].writeable();
  }
  py::list& reg = validated_cache();
  if (readonly) {
    // a copy: a weak reference callback may shrink the registry meanwhile
    auto entries = py::reinterpret_steal<py::list>(PySequence_List(reg.ptr()));
    for (auto entry : entries) {
      if (!key.equal(py::object(entry.cast<py::tuple>()[0]))) continue;
      if (entry_alive(entry)) {
        ia.cache = cache_of(entry);
        return ia;
      }
    }
  }
  {
    py::gil_scoped_release nogil;
    validate_index(ia.view, workers);
  }
  if (readonly) {
    forget_dead();
    py::object ref = py::module_::import("weakref").attr("ref");
    py::cpp_function on_death([](py::handle) { forget_dead(); });
    py::list refs;
    for (const auto& a : ia.keep) refs.append(ref(a, on_death));
    auto* holder = new std::shared_ptr<SearchCache>(make_search_cache(kSearchCacheBytes));
    py::capsule cap(holder, [](void* p) { delete static_cast<std::shared_ptr<SearchCache>*>(p); });
    ia.cache = *holder;
    reg.append(py::make_tuple(key, refs, cap));
    if (py::len(reg) > static_cast<std::size_t>(kRemembered)) reg.attr("pop")(0);
  }
  return ia;
}

struct QueryArg {
  Arr<std::int32_t> ids;
  Arr<std::int64_t> offsets;
  Queries q;
};

QueryArg query_arg(const py::object& ids_obj, const py::object& off_obj) {
  QueryArg a;
  a.ids = Arr<std::int32_t>::ensure(ids_obj);
  a.offsets = Arr<std::int64_t>::ensure(off_obj);
  if (!a.ids || a.ids.ndim() != 1) throw py::value_error("query_ids must be a 1-D integer array");
  if (!a.offsets || a.offsets.ndim() != 1 || a.offsets.shape(0) < 1)
    throw py::value_error("query_offsets must be a 1-D integer array of length Q + 1 >= 1");
  const std::int64_t* o = a.offsets.data();
  const py::ssize_t n = a.offsets.shape(0) - 1;
  if (o[0] != 0) throw py::value_error("query_offsets[0] must be 0, got " + std::to_string(o[0]));
  for (py::ssize_t i = 0; i < n; ++i)
    if (o[i + 1] < o[i])
      throw py::value_error("query_offsets must be non-decreasing; query_offsets[" + std::to_string(i + 1) +
                            "] < query_offsets[" + std::to_string(i) + "]");
  if (o[n] != a.ids.shape(0))
    throw py::value_error("query_offsets[-1] = " + std::to_string(o[n]) + " but there are " +
                          std::to_string(a.ids.shape(0)) + " ids");
  a.q.ids = a.ids.data();
  a.q.offsets = o;
  a.q.n = static_cast<std::size_t>(n);
  return a;
}

ScoreParams params_of(const std::string& model, double mu, const std::vector<double>& weights, double k1, double b) {
  ScoreParams p;
  p.model = parse_model(model);
  if (weights.size() != 3)
    throw py::value_error("weights must be 3 numbers (unigram, ordered, unordered), got " +
                          std::to_string(weights.size()));
  p.mu = mu;
  p.w_unigram = weights[0];
  p.w_ordered = weights[1];
  p.w_unordered = weights[2];
  p.k1 = k1;
  p.b = b;
  check_params(p);
  return p;
}

py::dict build_index_py(const py::object& ids_obj, const py::object& off_obj, std::int64_t vocab_size, int workers) {
  auto ids = Arr<std::int32_t>::ensure(ids_obj);
  auto off = Arr<std::int64_t>::ensure(off_obj);
  if (!ids || ids.ndim() != 1) throw py::value_error("ids must be a 1-D integer array");
  if (!off || off.ndim() != 1 || off.shape(0) < 1)
    throw py::value_error("offsets must be a 1-D integer array of length N + 1 >= 1");
  const std::size_t n_docs = static_cast<std::size_t>(off.shape(0) - 1);
  if (off.data()[n_docs] != ids.shape(0))
    throw py::value_error("offsets[-1] = " + std::to_string(off.data()[n_docs]) + " but there are " +
                          std::to_string(ids.shape(0)) + " ids");
  pysynth::resolve_workers(workers);
  IndexArrays a;
  {
    py::gil_scoped_release nogil;
    a = build_index(ids.data(), off.data(), n_docs, vocab_size, workers);
  }
  py::dict d;
  d["indptr"] = to_numpy(std::move(a.indptr));
  d["doc_ids"] = to_numpy(std::move(a.doc_ids));
  d["tfs"] = to_numpy(std::move(a.tfs));
  d["pos_indptr"] = to_numpy(std::move(a.pos_indptr));
  d["positions"] = to_numpy(std::move(a.positions));
  d["doc_offsets"] = to_numpy(std::move(a.doc_offsets));
  d["doc_tokens"] = to_numpy(std::move(a.doc_tokens));
  d["doc_lengths"] = to_numpy(std::move(a.doc_lengths));
  d["cf"] = to_numpy(std::move(a.cf));
  d["max_tf"] = to_numpy(std::move(a.max_tf));
  d["impact"] = to_numpy(std::move(a.impact));
  d["hi_indptr"] = to_numpy(std::move(a.hi_indptr));
  d["hi_doc_ids"] = to_numpy(std::move(a.hi_doc_ids));
  d["hi_tfs"] = to_numpy(std::move(a.hi_tfs));
  d["pair_terms"] = to_numpy(std::move(a.pair_terms));
  d["pair_cf_od"] = to_numpy(std::move(a.pair_cf_od));
  d["pair_cf_uw"] = to_numpy(std::move(a.pair_cf_uw));
  d["pair_max_od"] = to_numpy(std::move(a.pair_max_od));
  d["pair_max_uw"] = to_numpy(std::move(a.pair_max_uw));
  return d;
}

void validate_index_py(const py::object& index, int workers) {
  IndexArg ia = index_arg(index);
  pysynth::resolve_workers(workers);
  py::gil_scoped_release nogil;
  validate_index(ia.view, workers);
}

py::tuple search_py(const py::object& index, const py::object& query_ids, const py::object& query_offsets,
                    const std::string& model, int k, double mu, const std::vector<double>& weights, double k1, double b,
                    int workers, bool float64) {
  if (k < 1) throw py::value_error("k must be >= 1, got " + std::to_string(k));
  ScoreParams p = params_of(model, mu, weights, k1, b);
  pysynth::resolve_workers(workers);
  IndexArg ia = checked_index(index, workers);
  QueryArg qa = query_arg(query_ids, query_offsets);
  const auto nq = static_cast<py::ssize_t>(qa.q.n);
  py::array_t<std::int32_t> docs({nq, static_cast<py::ssize_t>(k)});
  py::array_t<std::int32_t> counts(nq);
  py::array scores = float64 ? py::array(py::array_t<double>({nq, static_cast<py::ssize_t>(k)}))
                             : py::array(py::array_t<float>({nq, static_cast<py::ssize_t>(k)}));
  std::int32_t* dp = docs.mutable_data();
  std::int32_t* cp = counts.mutable_data();
  void* sp = scores.mutable_data();
  {
    py::gil_scoped_release nogil;
    if (float64)
      search<double>(ia.view, qa.q, p, k, workers, dp, static_cast<double*>(sp), cp, ia.cache.get());
    else
      search<float>(ia.view, qa.q, p, k, workers, dp, static_cast<float*>(sp), cp, ia.cache.get());
  }
  return py::make_tuple(docs, scores, counts);
}

py::array_t<std::int32_t> target_ranks_py(const py::object& index, const py::object& query_ids,
                                          const py::object& query_offsets, const py::object& targets_obj, int n,
                                          const std::string& model, double mu, const std::vector<double>& weights,
                                          double k1, double b, int workers) {
  if (n < 1) throw py::value_error("n must be >= 1, got " + std::to_string(n));
  ScoreParams p = params_of(model, mu, weights, k1, b);
  pysynth::resolve_workers(workers);
  IndexArg ia = checked_index(index, workers);
  QueryArg qa = query_arg(query_ids, query_offsets);
  auto targets = Arr<std::int32_t>::ensure(targets_obj);
  if (!targets || targets.ndim() != 1 || static_cast<std::size_t>(targets.shape(0)) != qa.q.n)
    throw py::value_error("targets must have one entry per query (" + std::to_string(qa.q.n) + ")");
  py::array_t<std::int32_t> out(static_cast<py::ssize_t>(qa.q.n));
  std::int32_t* op = out.mutable_data();
  {
    py::gil_scoped_release nogil;
    target_ranks(ia.view, qa.q, targets.data(), p, n, workers, op, ia.cache.get());
  }
  return out;
}

py::tuple window_stats_py(const py::object& index, const py::object& a_obj, const py::object& b_obj, int workers) {
  pysynth::resolve_workers(workers);
  IndexArg ia = checked_index(index, workers);
  auto a = Arr<std::int32_t>::ensure(a_obj);
  auto b = Arr<std::int32_t>::ensure(b_obj);
  if (!a || !b || a.ndim() != 1 || b.ndim() != 1 || a.shape(0) != b.shape(0))
    throw py::value_error("a and b must be 1-D arrays of the same length");
  py::array_t<std::int64_t> od(a.shape(0)), uw(a.shape(0));
  std::int64_t* odp = od.mutable_data();
  std::int64_t* uwp = uw.mutable_data();
  {
    py::gil_scoped_release nogil;
    window_stats(ia.view, a.data(), b.data(), static_cast<std::size_t>(a.shape(0)), workers, odp, uwp);
  }
  return py::make_tuple(od, uw);
}

// What the SearchCache of an index holds (tests and benchmarks), after setting its bound to
// max_bytes when >= 0; None for an index that is not remembered (writable arrays).
py::object cache_info_py(const py::object& index, std::int64_t max_bytes) {
  IndexArg ia = checked_index(index, 1);
  if (!ia.cache) return py::none();
  if (max_bytes >= 0) set_search_cache_bound(*ia.cache, static_cast<std::size_t>(max_bytes));
  const SearchCacheInfo i = search_cache_info(*ia.cache);
  py::dict d;
  d["bytes"] = i.bytes;
  d["max_bytes"] = i.max_bytes;
  d["pair_stats"] = i.pair_stats;
  d["pair_lists"] = i.pair_lists;
  d["od_lists"] = i.od_lists;
  d["rank_maps"] = i.rank_maps;
  d["workers"] = i.workers;
  d["pairs_reused"] = i.pairs_reused;
  d["od_lists_reused"] = i.od_lists_reused;
  d["rank_maps_reused"] = i.rank_maps_reused;
  d["clears"] = i.clears;
  d["pair_clears"] = i.pair_clears;
  return d;
}

std::int32_t ordered_count_py(const std::vector<std::int32_t>& A, const std::vector<std::int32_t>& B, int width) {
  return ordered_count(A.data(), A.size(), B.data(), B.size(), width);
}

std::int32_t unordered_count_py(const std::vector<std::int32_t>& A, const std::vector<std::int32_t>& B, bool same_term,
                                int width) {
  return unordered_count(A.data(), A.size(), B.data(), B.size(), same_term, width);
}

// Short static docstrings (the summary of the twin's): importing the twins at load to copy theirs
// cost every `import pysynth._core` ~50 ms (bench/RESULTS_mqr.md, issue 29).
void register_retrieval(py::module_& m) {
  auto sub = m.def_submodule("retrieval",
                             "Positional inverted index, SDM and BM25 retrieval; twin: pysynth.retrieval._reference");
  sub.def("build_index", &build_index_py,
          "Build the positional index of the documents ``ids[offsets[d]:offsets[d+1]]``.\n\nFull docs: the twin "
          "pysynth.retrieval._reference.build_index.",
          py::arg("ids"), py::arg("offsets"), py::arg("vocab_size"), py::arg("workers"));
  sub.def("validate_index", &validate_index_py,
          "Check an index completely; raise ``ValueError`` naming the first inconsistency.\n\nFull docs: the twin "
          "pysynth.retrieval._reference.validate_index.",
          py::arg("index"), py::arg("workers"));
  sub.def("search", &search_py,
          "Top ``k`` documents of every query, by SDM or BM25 (definitions in the module docstring).\n\nFull docs: the "
          "twin pysynth.retrieval._reference.search.",
          py::arg("index"), py::arg("query_ids"), py::arg("query_offsets"), py::arg("model"), py::arg("k"),
          py::arg("mu"), py::arg("weights"), py::arg("k1"), py::arg("b"), py::arg("workers"), py::arg("float64"));
  sub.def("target_ranks", &target_ranks_py,
          "Rank (1-based) of ``targets[i]`` in the ranking of query ``i``, or 0 if not in the top ``n``.\n\nFull docs: "
          "the twin pysynth.retrieval._reference.target_ranks.",
          py::arg("index"), py::arg("query_ids"), py::arg("query_offsets"), py::arg("targets"), py::arg("n"),
          py::arg("model"), py::arg("mu"), py::arg("weights"), py::arg("k1"), py::arg("b"), py::arg("workers"));
  sub.def("window_stats", &window_stats_py,
          "Collection frequencies of the windows of the term pairs ``(a[i], b[i])``.\n\nFull docs: the twin "
          "pysynth.retrieval._reference.window_stats.",
          py::arg("index"), py::arg("a"), py::arg("b"), py::arg("workers"));
  sub.def("_cache_info", &cache_info_py,
          "What the compiled backend keeps across calls for this index (a dict), or None (writable arrays: nothing "
          "kept); max_bytes >= 0 sets its bound first. Private: tests and benchmarks.",
          py::arg("index"), py::arg("max_bytes") = -1);
  sub.def("ordered_count", &ordered_count_py,
          "Galago ``OrderedWindowIterator`` matches of ``#od:width(a b)`` in one document.\n\nFull docs: the twin "
          "pysynth.retrieval._reference.ordered_count.",
          py::arg("A"), py::arg("B"), py::arg("width"));
  sub.def("unordered_count", &unordered_count_py,
          "Galago ``UnorderedWindowIterator`` matches of ``#uw:width(a b)`` in one document.\n\nFull docs: the twin "
          "pysynth.retrieval._reference.unordered_count.",
          py::arg("A"), py::arg("B"), py::arg("same_term"), py::arg("width"));
}

pysynth::bind::Registrar reg("retrieval", &register_retrieval);

}  // namespace
