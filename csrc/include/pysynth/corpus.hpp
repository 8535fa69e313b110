// Corpus statistics and phrase detection for keyword query generation (Ding & Balog 2018,
// Sect. 3.1 and 3.1.4): questions -> vocabulary ids, collection/document frequencies, and
// gensim 4.4 `Phrases` / `FrozenPhrases` (Mikolov et al. 2013, Eq. 6) over id sequences.
// Plain C++17, no Python.h. The pure-Python twin is pysynth/text/_reference.py.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace pysynth::corpus {

// Tokenizers: Rouge = text.lower() and runs of [a-z0-9] (rouge-score's tokenizer, so that
// generated keyword queries and the AvgRougeL/MaxRougeL evaluation see the same tokens);
// Whitespace = Python's str.split() (case kept), for text that is already tokenized.
enum class Tokenizer { Rouge, Whitespace };

// A flat list of UTF-8 strings.
struct StringList {
  std::string bytes;
  std::vector<int64_t> offsets{0};
  size_t size() const { return offsets.size() - 1; }
  std::string_view operator[](size_t i) const {
    return std::string_view(bytes.data() + offsets[i], static_cast<size_t>(offsets[i + 1] - offsets[i]));
  }
  void push_back(std::string_view s) {
    bytes.append(s.data(), s.size());
    offsets.push_back(static_cast<int64_t>(bytes.size()));
  }
};

// A corpus as produced here: doc i = ids[offsets[i]:offsets[i+1]]; term ids ordered by
// descending collection frequency, ties by the term's UTF-8 bytes (= code point order).
// Every vocabulary term occurs at least once.
struct CorpusData {
  std::vector<int32_t> ids;
  std::vector<int64_t> offsets{0};
  std::vector<int64_t> cf;  // collection frequency n(t) (Eq. 2)
  std::vector<int64_t> df;  // document (question) frequency df(t) (Eq. 5)
  StringList vocab;
};

// A read-only view of a corpus given by the caller: offsets has n_docs + 1 entries, starts at
// 0, ends at the number of ids and never decreases (the bindings check); ids must lie in
// [0, n_terms) (checked here: std::invalid_argument otherwise). The vocabulary strings must be
// distinct (as build_corpus makes them; pysynth.text.Corpus checks it).
struct IdCorpus {
  const int32_t* ids = nullptr;
  const int64_t* offsets = nullptr;
  size_t n_docs = 0;
  const std::string_view* vocab = nullptr;
  size_t n_terms = 0;
  size_t n_ids() const { return n_docs ? static_cast<size_t>(offsets[n_docs]) : 0; }
};

// Tokenize every text and build the corpus. workers: -1 = all cores; the result does not
// depend on it.
CorpusData build_corpus(const std::string_view* texts, size_t n, Tokenizer tok, int workers);

// Token rows against a per-call vocabulary: row i = vocab[ids[offsets[i]:offsets[i+1]]], every
// distinct token once in vocab (its order depends on the number of workers; the rows do not).
struct TokenRows {
  std::vector<int32_t> ids;
  std::vector<int64_t> offsets{0};
  StringList vocab;
};

// tokenize(tid, row, out) appends the tokens of `row` to `out`; the views must stay valid
// until that thread's next call. Rows are tokenized by `workers` threads, each interning into
// a table of its own; the tables are merged afterwards (issue 29: the tokenizers' callers then
// make one Python str per distinct token instead of one per token).
using RowTokenizer = std::function<void(size_t tid, size_t row, std::vector<std::string_view>& out)>;
// on_rows(begin, end, lens): lens[0 .. end - begin) = the token counts of rows [begin, end).
// Called on the calling thread only, for consecutive blocks that cover every row in order, as
// soon as a block is tokenized, between the calling thread's own blocks, while the other
// workers keep tokenizing (so the caller's serial work, e.g. making Python lists while it
// holds the GIL, overlaps theirs; issue 29). An exception from it ends the call.
using RowsDone = std::function<void(size_t begin, size_t end, const int64_t* lens)>;
TokenRows intern_rows(size_t n, int workers, const RowTokenizer& tokenize, const RowsDone* on_rows = nullptr);

// build_corpus's tokenization without the statistics.
TokenRows tokenize_rows(const std::string_view* texts, size_t n, Tokenizer tok, int workers,
                        const RowsDone* on_rows = nullptr);

// ------------------------------------------------------------------------ phrases

// gensim's phrase vocabulary (`Phrases.vocab`: token or joined candidate -> count) in id
// space. Key k = vocab terms key_terms[key_offsets[k]:key_offsets[k+1]] joined with the
// delimiter; one term = a unigram, two or more = a candidate "a [connectors...] b". Every
// distinct joined string appears once (gensim counts by string: when a term contains the
// delimiter, a unigram and candidates can share a string; the key then holds the first of
// them in key order). Keys are sorted by (number of terms, terms); counts are >= 1.
struct PhraseCounts {
  std::vector<int64_t> key_offsets{0};
  std::vector<int32_t> key_terms;
  std::vector<int64_t> key_counts;
  int64_t corpus_word_count = 0;  // all tokens, connector words included
  int64_t min_reduce = 1;         // 1 + number of max_vocab_size prunings
};

// gensim `Phrases._learn_vocab` on a corpus: unigram counts of non-connector tokens,
// candidate counts, and (when the number of keys would exceed max_vocab_size) the same
// sentence-by-sentence pruning as gensim (`utils.prune_vocab(vocab, min_reduce)`).
PhraseCounts count_phrases(const IdCorpus& corpus, const std::string_view* connectors, size_t n_connectors,
                           std::string_view delimiter, int64_t max_vocab_size, int workers);

enum class Scoring { Default, Npmi };

// gensim's scorers with Python's floating-point operations (same results, bit for bit):
//   Default (original_scorer; Mikolov et al. 2013, Eq. 6 times |V|): -inf if the product is 0, else
//     (bigram_count - min_count) / double(worda_count * wordb_count) * len_vocab
//   Npmi (Bouma 2009): -inf if bigram_count < min_count, else
//     log(pab / (pa * pb)) / -log(pab),  p* = count / double(corpus_word_count)
//   with -inf where math.log raises ValueError (gensim catches it) and where Python would raise
//   ZeroDivisionError (corpus_word_count == 0, pab == 1: never with counts learned from a corpus).
double phrase_score(Scoring scoring, int64_t worda_count, int64_t wordb_count, int64_t bigram_count, int64_t len_vocab,
                    int64_t min_count, int64_t corpus_word_count);

struct ScoreParams {
  Scoring scoring = Scoring::Default;
  int64_t min_count = 5;
  double threshold = 10.0;
};

// A learned model: the PhraseCounts arrays plus the vocabulary their term ids refer to.
struct PhraseModel {
  const std::string_view* vocab = nullptr;
  size_t n_terms = 0;
  const int64_t* key_offsets = nullptr;
  const int32_t* key_terms = nullptr;
  const int64_t* key_counts = nullptr;
  size_t n_keys = 0;
  int64_t corpus_word_count = 0;
};

// gensim `Phrases.export_phrases()`: every key whose string contains the delimiter is split
// on it and scored as (first piece, last piece, key); those scoring above the threshold are
// returned (in key order) with their scores.
void export_phrases(const PhraseModel& model, std::string_view delimiter, const ScoreParams& params,
                    StringList& phrases, std::vector<double>& scores);

// gensim `Phrases[sentence]` (analyze_sentence + Phrases.score_candidate) on every document.
CorpusData apply_phrases(const IdCorpus& corpus, const std::string_view* connectors, size_t n_connectors,
                         std::string_view delimiter, const PhraseModel& model, const ScoreParams& params, int workers);

// gensim `FrozenPhrases[sentence]`: a candidate is joined when phrases[i] == its string and
// scores[i] > threshold. phrases must be distinct.
CorpusData apply_frozen(const IdCorpus& corpus, const std::string_view* connectors, size_t n_connectors,
                        std::string_view delimiter, const std::string_view* phrases, const double* scores,
                        size_t n_phrases, double threshold, int workers);

}  // namespace pysynth::corpus
