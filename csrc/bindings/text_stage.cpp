// Bindings of the text stage (pysynth._core.text): corpus statistics and gensim-identical
// phrase detection. Glue only: convert and validate, release the GIL, call
// pysynth::corpus (csrc/src/corpus.cpp), wrap the results. The pure-Python twin with the same
// names, signatures and docstrings is pysynth/text/_reference.py.
#include <Python.h>

#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"
#include "pysynth/common.hpp"
#include "pysynth/corpus.hpp"
#include "registry.hpp"

namespace py = pybind11;
namespace cp = pysynth::corpus;

namespace {

using I32 = py::array_t<int32_t, py::array::c_style | py::array::forcecast>;
using I64 = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
using F64 = py::array_t<double, py::array::c_style | py::array::forcecast>;

template <class T>
py::array_t<T> to_array(std::vector<T>&& v) {
  auto* p = new std::vector<T>(std::move(v));
  py::capsule owner(p, [](void* q) { delete static_cast<std::vector<T>*>(q); });
  return py::array_t<T>({static_cast<py::ssize_t>(p->size())}, {static_cast<py::ssize_t>(sizeof(T))}, p->data(), owner);
}

py::list to_list(const cp::StringList& s) {
  size_t n = s.size();
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(n));
  if (!list) throw py::error_already_set();
  py::list out = py::reinterpret_steal<py::list>(list);
  for (size_t i = 0; i < n; ++i) {
    std::string_view v = s[i];
    PyObject* str = PyUnicode_DecodeUTF8(v.data(), static_cast<Py_ssize_t>(v.size()), "strict");
    if (!str) throw py::error_already_set();
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), str);
  }
  return out;
}

// A 1-d integer array of exactly int32 values: other integer dtypes are range-checked first
// (forcecast alone would wrap 2**32 + 5 to 5).
template <class Arr, class T>
Arr int_array(py::handle obj, const char* name) {
  py::array a = py::array::ensure(obj);
  if (!a) throw py::type_error(std::string(name) + " must be a 1-d integer array");
  char kind = a.dtype().kind();
  if (kind != 'i' && kind != 'u' && !(kind == 'b' && a.size() == 0))
    throw py::type_error(std::string(name) + " must be a 1-d integer array, got dtype " +
                         std::string(py::str(a.dtype())));
  if (a.ndim() != 1)
    throw py::value_error(std::string(name) + " must be 1-d, got " + std::to_string(a.ndim()) + " dimensions");
  if (a.size() > 0 && !a.dtype().is(py::dtype::of<T>())) {
    py::object lo = a.attr("min")(), hi = a.attr("max")();
    if (lo < py::int_(std::numeric_limits<T>::min()) || hi > py::int_(std::numeric_limits<T>::max()))
      throw py::value_error(std::string(name) + " holds values outside the range of " +
                            std::string(py::str(py::dtype::of<T>())));
  }
  return Arr::ensure(a);
}

I32 ids_array(py::handle obj, const char* name) { return int_array<I32, int32_t>(obj, name); }
I64 i64_array(py::handle obj, const char* name) { return int_array<I64, int64_t>(obj, name); }

// ids + offsets + vocab -> a validated view (ids range is checked by the library).
struct IdInput {
  I32 ids;
  I64 offsets;
  pysynth::bind::Column vocab;
  cp::IdCorpus view;
};

IdInput id_input(py::handle ids, py::handle offsets, py::handle vocab) {
  IdInput in;
  in.ids = ids_array(ids, "ids");
  I64 off = i64_array(offsets, "offsets");
  if (off.shape(0) < 1) throw py::value_error("offsets must have n_docs + 1 >= 1 entries");
  size_t n_docs = static_cast<size_t>(off.shape(0)) - 1;
  in.offsets = pysynth::bind::to_offsets(off, n_docs, static_cast<size_t>(in.ids.shape(0)), "offsets");
  in.vocab = pysynth::bind::to_strings(vocab, "vocab");
  // the library checks the range too, but later: here, so that an input with several faults is
  // refused for the same one (and with the same exception type) as by the twin, which checks first
  const int32_t* ip = in.ids.data();
  const auto n_vocab = static_cast<int64_t>(in.vocab.views.size());
  for (py::ssize_t i = 0, n = in.ids.shape(0); i < n; ++i)
    if (ip[i] < 0 || ip[i] >= n_vocab)
      throw py::value_error("ids[" + std::to_string(i) + "] = " + std::to_string(ip[i]) + " is outside [0, " +
                            std::to_string(n_vocab) + "), the vocabulary size");
  in.view.ids = in.ids.data();
  in.view.offsets = in.offsets.data();
  in.view.n_docs = n_docs;
  in.view.vocab = in.vocab.views.data();
  in.view.n_terms = in.vocab.views.size();
  return in;
}

cp::Scoring parse_scoring(const std::string& s) {
  if (s == "default") return cp::Scoring::Default;
  if (s == "npmi") return cp::Scoring::Npmi;
  throw py::value_error("scoring must be 'default' or 'npmi', got '" + s + "'");
}

cp::Tokenizer parse_tokenizer(const std::string& s) {
  if (s == "rouge") return cp::Tokenizer::Rouge;
  if (s == "whitespace") return cp::Tokenizer::Whitespace;
  throw py::value_error("tokenizer must be 'rouge' or 'whitespace', got '" + s + "'");
}

std::string delimiter_arg(const std::string& d) {
  if (d.empty()) throw py::value_error("delimiter must be a non-empty string");
  return d;
}

py::tuple corpus_tuple(cp::CorpusData&& c) {
  py::list vocab = to_list(c.vocab);
  return py::make_tuple(to_array(std::move(c.ids)), to_array(std::move(c.offsets)), to_array(std::move(c.cf)),
                        to_array(std::move(c.df)), vocab);
}

// Model arrays -> a validated view.
struct ModelInput {
  pysynth::bind::Column vocab;
  I64 key_offsets;
  I32 key_terms;
  I64 key_counts;
  cp::PhraseModel view;
};

ModelInput model_input(py::handle vocab, py::handle key_offsets, py::handle key_terms, py::handle key_counts,
                       int64_t corpus_word_count, const char* vocab_name) {
  ModelInput m;
  m.vocab = pysynth::bind::to_strings(vocab, vocab_name);
  m.key_offsets = i64_array(key_offsets, "key_offsets");
  m.key_terms = ids_array(key_terms, "key_terms");
  m.key_counts = i64_array(key_counts, "key_counts");
  if (m.key_offsets.shape(0) < 1) throw py::value_error("key_offsets must have n_keys + 1 >= 1 entries");
  auto n_keys = static_cast<size_t>(m.key_offsets.shape(0)) - 1;
  if (static_cast<size_t>(m.key_counts.shape(0)) != n_keys)
    throw py::value_error("key_counts has " + std::to_string(m.key_counts.shape(0)) +
                          " entries but key_offsets describes " + std::to_string(n_keys) + " keys");
  const int64_t* o = m.key_offsets.data();
  if (o[0] != 0 || o[n_keys] != static_cast<int64_t>(m.key_terms.shape(0)))
    throw py::value_error("key_offsets must start at 0 and end at len(key_terms) = " +
                          std::to_string(m.key_terms.shape(0)));
  m.view.vocab = m.vocab.views.data();
  m.view.n_terms = m.vocab.views.size();
  m.view.key_offsets = o;
  m.view.key_terms = m.key_terms.data();
  m.view.key_counts = m.key_counts.data();
  m.view.n_keys = n_keys;
  m.view.corpus_word_count = corpus_word_count;
  return m;
}

// --------------------------------------------------------------------- functions

// Tokens are interned while tokenizing (GIL released, in parallel) and the rows share one str
// per distinct token (pysynth::bind::token_lists). History: 1M questions, 7.8M tokens, one
// str per token under the GIL took 3.96 s with 1 thread or 2 alike; shared str 1.26 s, of which
// 0.81 s were GC passes over the growing list of lists; without them 0.45 s (1 thread) and
// 0.29 s (2).
py::list tokenize_py(py::handle texts, const std::string& tokenizer, int workers) {
  auto c = pysynth::bind::to_strings(texts, "texts", workers);
  cp::Tokenizer tok = parse_tokenizer(tokenizer);
  pysynth::resolve_workers(workers);
  return pysynth::bind::token_lists(c.views.size(), workers, [&](const cp::RowsDone* on_rows) {
    return cp::tokenize_rows(c.views.data(), c.views.size(), tok, workers, on_rows);
  });
}

py::tuple build_corpus_py(py::handle texts, const std::string& tokenizer, int workers) {
  auto c = pysynth::bind::to_strings(texts, "texts");
  cp::Tokenizer tok = parse_tokenizer(tokenizer);
  pysynth::resolve_workers(workers);
  cp::CorpusData out;
  {
    py::gil_scoped_release nogil;
    out = cp::build_corpus(c.views.data(), c.views.size(), tok, workers);
  }
  return corpus_tuple(std::move(out));
}

py::tuple count_phrases_py(py::handle ids, py::handle offsets, py::handle vocab, py::handle connector_words,
                           const std::string& delimiter, int64_t max_vocab_size, int workers) {
  IdInput in = id_input(ids, offsets, vocab);
  auto conn = pysynth::bind::to_strings(connector_words, "connector_words");
  std::string d = delimiter_arg(delimiter);
  pysynth::resolve_workers(workers);
  cp::PhraseCounts pc;
  {
    py::gil_scoped_release nogil;
    pc = cp::count_phrases(in.view, conn.views.data(), conn.views.size(), d, max_vocab_size, workers);
  }
  return py::make_tuple(to_array(std::move(pc.key_offsets)), to_array(std::move(pc.key_terms)),
                        to_array(std::move(pc.key_counts)), pc.corpus_word_count, pc.min_reduce);
}

py::tuple export_phrases_py(py::handle vocab, py::handle key_offsets, py::handle key_terms, py::handle key_counts,
                            int64_t corpus_word_count, const std::string& delimiter, int64_t min_count,
                            double threshold, const std::string& scoring) {
  ModelInput m = model_input(vocab, key_offsets, key_terms, key_counts, corpus_word_count, "vocab");
  cp::ScoreParams params{parse_scoring(scoring), min_count, threshold};
  std::string d = delimiter_arg(delimiter);
  cp::StringList phrases;
  std::vector<double> scores;
  {
    py::gil_scoped_release nogil;
    cp::export_phrases(m.view, d, params, phrases, scores);
  }
  py::list names = to_list(phrases);
  return py::make_tuple(names, to_array(std::move(scores)));
}

py::tuple apply_phrases_py(py::handle ids, py::handle offsets, py::handle vocab, py::handle connector_words,
                           const std::string& delimiter, py::handle model_vocab, py::handle key_offsets,
                           py::handle key_terms, py::handle key_counts, int64_t corpus_word_count, int64_t min_count,
                           double threshold, const std::string& scoring, int workers) {
  IdInput in = id_input(ids, offsets, vocab);
  auto conn = pysynth::bind::to_strings(connector_words, "connector_words");
  std::string d = delimiter_arg(delimiter);
  ModelInput m = model_input(model_vocab, key_offsets, key_terms, key_counts, corpus_word_count, "model_vocab");
  cp::ScoreParams params{parse_scoring(scoring), min_count, threshold};
  pysynth::resolve_workers(workers);
  cp::CorpusData out;
  {
    py::gil_scoped_release nogil;
    out = cp::apply_phrases(in.view, conn.views.data(), conn.views.size(), d, m.view, params, workers);
  }
  return corpus_tuple(std::move(out));
}

py::tuple apply_frozen_py(py::handle ids, py::handle offsets, py::handle vocab, py::handle connector_words,
                          const std::string& delimiter, py::handle phrases, py::handle scores, double threshold,
                          int workers) {
  IdInput in = id_input(ids, offsets, vocab);
  auto conn = pysynth::bind::to_strings(connector_words, "connector_words");
  std::string d = delimiter_arg(delimiter);
  auto ph = pysynth::bind::to_strings(phrases, "phrases");
  F64 sc = F64::ensure(scores);
  if (!sc || sc.ndim() != 1) throw py::type_error("scores must be a 1-d float array");
  if (static_cast<size_t>(sc.shape(0)) != ph.views.size())
    throw py::value_error("scores has " + std::to_string(sc.shape(0)) + " entries but phrases has " +
                          std::to_string(ph.views.size()));
  pysynth::resolve_workers(workers);
  cp::CorpusData out;
  {
    py::gil_scoped_release nogil;
    out = cp::apply_frozen(in.view, conn.views.data(), conn.views.size(), d, ph.views.data(), sc.data(),
                           ph.views.size(), threshold, workers);
  }
  return corpus_tuple(std::move(out));
}

double phrase_score_py(const std::string& scoring, int64_t worda_count, int64_t wordb_count, int64_t bigram_count,
                       int64_t len_vocab, int64_t min_count, int64_t corpus_word_count) {
  return cp::phrase_score(parse_scoring(scoring), worda_count, wordb_count, bigram_count, len_vocab, min_count,
                          corpus_word_count);
}

}  // namespace

// Short static docstrings (the summary of the twin's): importing the twins at load to copy theirs
// cost every `import pysynth._core` ~50 ms (bench/RESULTS_mqr.md, issue 29).
void register_text(py::module_& m) {
  auto sub =
      m.def_submodule("text", "Corpus statistics and gensim-identical phrase detection; twin: pysynth.text._reference");
  sub.def("tokenize", &tokenize_py, "Split texts into tokens.\n\nFull docs: the twin pysynth.text._reference.tokenize.",
          py::arg("texts"), py::arg("tokenizer"), py::arg("workers"));
  sub.def("build_corpus", &build_corpus_py,
          "Tokenize questions and count their terms (Ding & Balog 2018, Sect. 3.1.1).\n\nFull docs: the twin "
          "pysynth.text._reference.build_corpus.",
          py::arg("texts"), py::arg("tokenizer"), py::arg("workers"));
  sub.def("count_phrases", &count_phrases_py,
          "Count unigrams and phrase candidates as gensim 4.4 ``Phrases`` learns them.\n\nFull docs: the twin "
          "pysynth.text._reference.count_phrases.",
          py::arg("ids"), py::arg("offsets"), py::arg("vocab"), py::arg("connector_words"), py::arg("delimiter"),
          py::arg("max_vocab_size"), py::arg("workers"));
  sub.def("export_phrases", &export_phrases_py,
          "The phrase table of a learned model: gensim 4.4 ``Phrases.export_phrases()``.\n\nFull docs: the twin "
          "pysynth.text._reference.export_phrases.",
          py::arg("vocab"), py::arg("key_offsets"), py::arg("key_terms"), py::arg("key_counts"),
          py::arg("corpus_word_count"), py::arg("delimiter"), py::arg("min_count"), py::arg("threshold"),
          py::arg("scoring"));
  sub.def("apply_phrases", &apply_phrases_py,
          "Join phrases in every document with a learned model: gensim 4.4 ``Phrases[sentence]``.\n\nFull docs: the "
          "twin pysynth.text._reference.apply_phrases.",
          py::arg("ids"), py::arg("offsets"), py::arg("vocab"), py::arg("connector_words"), py::arg("delimiter"),
          py::arg("model_vocab"), py::arg("key_offsets"), py::arg("key_terms"), py::arg("key_counts"),
          py::arg("corpus_word_count"), py::arg("min_count"), py::arg("threshold"), py::arg("scoring"),
          py::arg("workers"));
  sub.def("apply_frozen", &apply_frozen_py,
          "Join phrases in every document with a phrase table: gensim 4.4 ``FrozenPhrases[sentence]``.\n\nFull docs: "
          "the twin pysynth.text._reference.apply_frozen.",
          py::arg("ids"), py::arg("offsets"), py::arg("vocab"), py::arg("connector_words"), py::arg("delimiter"),
          py::arg("phrases"), py::arg("scores"), py::arg("threshold"), py::arg("workers"));
  sub.def("phrase_score", &phrase_score_py,
          "Score of a phrase candidate, as gensim 4.4's scorers compute it (same float operations).\n\nFull docs: the "
          "twin pysynth.text._reference.phrase_score.",
          py::arg("scoring"), py::arg("worda_count"), py::arg("wordb_count"), py::arg("bigram_count"),
          py::arg("len_vocab"), py::arg("min_count"), py::arg("corpus_word_count"));
}

static pysynth::bind::Registrar reg("text", &register_text);
