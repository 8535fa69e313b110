// Bindings of the metrics stage (pysynth._core.metrics). Glue only: convert, release the
// GIL, call the library, wrap the result.
#include <cctype>
#include <cmath>
#include <stdexcept>

#include "common.hpp"
#include "pysynth/common.hpp"

namespace pysynth::bind {

namespace {

std::vector<RougeType> parse_types(const std::vector<std::string>& names) {
  std::vector<RougeType> out;
  for (const auto& s : names) {
    if (s == "rougeL") {
      out.push_back({RougeKind::L, 0});
    } else if (s == "rougeLsum") {
      out.push_back({RougeKind::Lsum, 0});
    } else if (s.size() > 5 && s.compare(0, 5, "rouge") == 0 &&
               s.find_first_not_of("0123456789", 5) == std::string::npos && s.size() < 8) {
      int n = std::stoi(s.substr(5));
      if (n < 1) throw py::value_error("types: " + s + " needs n >= 1");
      out.push_back({RougeKind::N, n});
    } else {
      throw py::value_error("types: unknown ROUGE type '" + s +
                            "'; use rouge1..rouge9 (any rougeN), rougeL or rougeLsum");
    }
  }
  if (out.empty()) throw py::value_error("types must name at least one ROUGE type");
  return out;
}

RougeFlavor parse_flavor(const std::string& f) {
  if (f == "rouge-score") return RougeFlavor::RougeScore;
  if (f == "pltrdy") return RougeFlavor::Pltrdy;
  throw py::value_error("flavor must be 'rouge-score' or 'pltrdy', got '" + f + "'");
}

Smooth parse_smooth(const std::string& s) {
  if (s == "none") return Smooth::None;
  if (s == "floor") return Smooth::Floor;
  if (s == "add-k") return Smooth::AddK;
  if (s == "exp") return Smooth::Exp;
  throw py::value_error("smooth_method must be one of none, floor, add-k, exp; got '" + s + "'");
}

py::array_t<int64_t> rouge_stats_py(py::handle hyps, py::handle refs, py::handle ref_offsets,
                                    const std::vector<std::string>& types, const std::string& flavor, bool stem,
                                    int workers) {
  Column h = to_column(hyps, "hyps", workers);
  Column r = to_column(refs, "refs", workers);
  auto off = to_offsets(ref_offsets, h.col.size, r.col.size, "ref_offsets");
  RougeConfig cfg;
  cfg.flavor = parse_flavor(flavor);
  cfg.types = parse_types(types);
  cfg.stem = stem;
  resolve_workers(workers);
  py::array_t<int64_t> out(
      {static_cast<py::ssize_t>(r.col.size), static_cast<py::ssize_t>(cfg.types.size()), py::ssize_t{3}});
  int64_t* o = out.mutable_data();
  {
    py::gil_scoped_release nogil;
    rouge_stats(h.col, r.col, off.data(), cfg, workers, o);
  }
  return out;
}

py::array_t<double> rouge_prf_texts_py(py::handle hyps, py::handle refs, py::handle ref_offsets,
                                       const std::vector<std::string>& types, bool stem, int workers) {
  Column h = to_column(hyps, "hyps", workers);
  Column r = to_column(refs, "refs", workers);
  auto off = to_offsets(ref_offsets, h.col.size, r.col.size, "ref_offsets");
  RougeConfig cfg;
  cfg.types = parse_types(types);
  cfg.stem = stem;
  resolve_workers(workers);
  py::array_t<double> out(
      {py::ssize_t{3}, static_cast<py::ssize_t>(cfg.types.size()), static_cast<py::ssize_t>(r.col.size)});
  double* o = out.mutable_data();
  {
    py::gil_scoped_release nogil;
    rouge_stats(h.col, r.col, off.data(), cfg, workers, nullptr, o);
  }
  return out;
}

py::array_t<int64_t> bleu_stats_py(py::handle hyps, py::handle refs, py::handle ref_offsets,
                                   const std::string& tokenize, int max_order, int workers) {
  Column h = to_column(hyps, "hyps", workers);
  Column r = to_column(refs, "refs", workers);
  auto off = to_offsets(ref_offsets, h.col.size, r.col.size, "ref_offsets");
  BleuTokenize tok;
  if (tokenize == "13a") {
    tok = BleuTokenize::T13a;
  } else if (tokenize == "none") {
    tok = BleuTokenize::None;
  } else {
    throw py::value_error("tokenize must be '13a' or 'none' in the compiled path, got '" + tokenize + "'");
  }
  if (max_order < 1) throw py::value_error("max_order must be >= 1");
  if (h.col.is_ids() && tok != BleuTokenize::None)
    throw py::value_error("token ids are already tokenized: use tokenize='none'");
  resolve_workers(workers);
  py::array_t<int64_t> out({static_cast<py::ssize_t>(h.col.size), static_cast<py::ssize_t>(2 + 2 * max_order)});
  int64_t* o = out.mutable_data();
  {
    py::gil_scoped_release nogil;
    bleu_stats(h.col, r.col, off.data(), tok, max_order, workers, o);
  }
  return out;
}

using StatsArray = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

StatsArray check_stats(py::handle stats, int max_order) {
  auto s = StatsArray::ensure(stats);
  if (max_order < 1) throw py::value_error("max_order must be >= 1");
  if (!s || s.ndim() != 2 || s.shape(1) != 2 + 2 * max_order)
    throw py::value_error("stats must be an int64 array of shape (n, " + std::to_string(2 + 2 * max_order) + ")");
  const int64_t* p = s.data();
  for (py::ssize_t i = 0, n = s.size(); i < n; ++i)  // counts: a negative one would give NaN
    if (p[i] < 0) throw py::value_error("stats must be non-negative counts");
  return s;
}

py::array_t<double> sacrebleu_sentence_py(py::handle stats, const std::string& smooth_method, double smooth_value,
                                          bool effective_order, int max_order, int workers) {
  auto s = check_stats(stats, max_order);
  Smooth sm = parse_smooth(smooth_method);
  if (!std::isfinite(smooth_value) || smooth_value < 0)
    throw py::value_error("smooth_value must be a finite number >= 0, got " +
                          py::repr(py::float_(smooth_value)).cast<std::string>());
  py::object vi = py::module_::import("sys").attr("version_info");
  bool compensated = py::cast<int>(vi.attr("major")) > 3 ||
                     (py::cast<int>(vi.attr("major")) == 3 && py::cast<int>(vi.attr("minor")) >= 12);
  resolve_workers(workers);
  size_t n = static_cast<size_t>(s.shape(0));
  py::array_t<double> out(static_cast<py::ssize_t>(n));
  double* o = out.mutable_data();
  {
    py::gil_scoped_release nogil;
    sacrebleu_sentence_scores(s.data(), n, max_order, sm, smooth_value, effective_order, compensated, o, workers);
  }
  return out;
}

py::array_t<double> coco_sentence_py(py::handle stats, int max_order, int workers) {
  auto s = check_stats(stats, max_order);
  resolve_workers(workers);
  size_t n = static_cast<size_t>(s.shape(0));
  py::array_t<double> out({static_cast<py::ssize_t>(n), static_cast<py::ssize_t>(max_order)});
  double* o = out.mutable_data();
  {
    py::gil_scoped_release nogil;
    coco_sentence_scores(s.data(), n, max_order, o, workers);
  }
  return out;
}

py::array_t<double> rouge_prf_py(py::handle stats) {
  auto s = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(stats);
  if (!s || s.ndim() != 3 || s.shape(2) != 3)
    throw py::value_error("stats must be an int64 array of shape (rows, types, 3)");
  size_t rows = static_cast<size_t>(s.shape(0)), T = static_cast<size_t>(s.shape(1));
  py::array_t<double> out({py::ssize_t{3}, static_cast<py::ssize_t>(T), static_cast<py::ssize_t>(rows)});
  double* o = out.mutable_data();
  {
    py::gil_scoped_release nogil;
    rouge_score_prf(s.data(), rows, T, o);
  }
  return out;
}

py::list tokenize_py(py::handle texts, const std::string& tokenizer, int workers) {
  Column c = to_strings(texts, "texts", workers);
  TokenizerKind kind;
  if (tokenizer == "rouge") {
    kind = TokenizerKind::Rouge;
  } else if (tokenizer == "rouge-stem") {
    kind = TokenizerKind::RougeStem;
  } else if (tokenizer == "13a") {
    kind = TokenizerKind::T13a;
  } else if (tokenizer == "none") {
    kind = TokenizerKind::Whitespace;
  } else {
    throw py::value_error("tokenizer must be one of rouge, rouge-stem, 13a, none; got '" + tokenizer + "'");
  }
  resolve_workers(workers);
  return token_lists(c.views.size(), workers, [&](const corpus::RowsDone* on_rows) {
    return tokenize_ids(c.views.data(), c.views.size(), kind, workers, on_rows);
  });
}

}  // namespace

// Short static docstrings (the summary of the twin's): importing the twins at load to copy theirs
// cost every `import pysynth._core` ~50 ms (bench/RESULTS_mqr.md, issue 29).
void register_metrics(py::module_& m) {
  auto sub = m.def_submodule("metrics", "n-gram and LCS statistics for ROUGE and BLEU");
  sub.def("rouge_stats", &rouge_stats_py,
          "Integer ROUGE statistics for each (hypothesis, reference) row.\n\nFull docs: the twin "
          "pysynth.metrics._reference.rouge_stats.",
          py::arg("hyps"), py::arg("refs"), py::arg("ref_offsets"), py::arg("types"), py::arg("flavor"),
          py::arg("stem"), py::arg("workers"));
  sub.def("rouge_prf_texts", &rouge_prf_texts_py,
          "rouge-score 0.1.2 precision, recall and F straight from the texts.\n\nFull docs: the twin "
          "pysynth.metrics._reference.rouge_prf_texts.",
          py::arg("hyps"), py::arg("refs"), py::arg("ref_offsets"), py::arg("types"), py::arg("stem"),
          py::arg("workers"));
  sub.def("rouge_prf", &rouge_prf_py,
          "rouge-score 0.1.2 precision, recall and F from :func:`rouge_stats` output.\n\nFull docs: the twin "
          "pysynth.metrics._reference.rouge_prf.",
          py::arg("stats"));
  sub.def("bleu_stats", &bleu_stats_py,
          "BLEU sufficient statistics per hypothesis (Papineni et al. 2002, Eq. 1-2).\n\nFull docs: the twin "
          "pysynth.metrics._reference.bleu_stats.",
          py::arg("hyps"), py::arg("refs"), py::arg("ref_offsets"), py::arg("tokenize"), py::arg("max_order"),
          py::arg("workers"));
  sub.def("sacrebleu_sentence_scores", &sacrebleu_sentence_py,
          "sacrebleu's BLEU of each row of ``stats`` (see :func:`bleu_stats`).\n\nFull docs: the twin "
          "pysynth.metrics._reference.sacrebleu_sentence_scores.",
          py::arg("stats"), py::arg("smooth_method"), py::arg("smooth_value"), py::arg("effective_order"),
          py::arg("max_order"), py::arg("workers") = 1);
  sub.def("coco_sentence_scores", &coco_sentence_py,
          "pycocoevalcap's per-segment BLEU-1..max_order of each row of ``stats``.\n\nFull docs: the twin "
          "pysynth.metrics._reference.coco_sentence_scores.",
          py::arg("stats"), py::arg("max_order"), py::arg("workers") = 1);
  sub.def("tokenize", &tokenize_py,
          "Tokens of each text: ``rouge``, ``rouge-stem``, ``13a`` or ``none`` (whitespace).\n\nFull docs: the twin "
          "pysynth.metrics._reference.tokenize.",
          py::arg("texts"), py::arg("tokenizer"), py::arg("workers"));
  register_porter(sub);
  register_meteor(sub);
}

}  // namespace pysynth::bind
