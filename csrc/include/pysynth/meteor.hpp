// METEOR 1.5 (Denkowski & Lavie 2014) as the Meteor 1.5 jar scores with nlg-eval's
// "-l en -norm": exact / Snowball-stem / WordNet-synonym / paraphrase matching, the jar's beam
// aligner (beam 40, its tie-breaking and quirks) and its sufficient statistics.
//
// Input segments are already normalized and lower-cased (pysynth/metrics/_meteor_ref.py's
// normalize); tokens are separated by StringTokenizer's delimiters.  The pure-Python twin,
// pysynth/metrics/_meteor_ref.py, is the specification; tests assert identical statistics.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace pysynth::meteor {

constexpr int kStats = 23;  // tl rl tfw rfw tc[4] rc[4] tf[4] rf[4] chunks twm rwm

// Borrowed views of the paraphrase cache's arrays (pysynth/metrics/_meteor_data.py).
struct ParaArrays {
  const uint8_t* vocab_blob = nullptr;
  const int64_t* vocab_off = nullptr;
  size_t n_vocab = 0;
  const int32_t* phr_tok = nullptr;
  const int64_t* phr_off = nullptr;
  size_t n_phr = 0;
  const int64_t* grp_ptr = nullptr;
  const int32_t* grp_par = nullptr;
  const uint64_t* htab_key = nullptr;
  const int32_t* htab_val = nullptr;
  size_t htab_size = 0;  // a power of two (or 0)
  // hashes of the proper prefixes of those phrases (a set; pfx_val -1 marks an empty slot)
  const uint64_t* pfx_key = nullptr;
  const int32_t* pfx_val = nullptr;
  size_t pfx_size = 0;                 // a power of two (or 0: no pruning)
  const uint64_t* grp_hash = nullptr;  // hash of each grp_par entry's phrase
  int max_len = 0;
};

// What the matchers need of one word: Java hash codes of the word and of its Snowball stem,
// WordNet synset ids (sorted), paraphrase-table word id (-1: absent), function word or not.
// phrase1 / prefix1: the table phrase of the word alone (-1: none) and whether longer phrases start with
// it; hash1: the hashes of that phrase's paraphrases (its grp_hash entries, copied: the scan of a
// frequent word's group then stays in cache instead of reaching into the 40 MB array each time).
struct WordInfo {
  int32_t hash = 0, stem_hash = 0, pid = -1, phrase1 = -1;
  bool func = false, prefix1 = false;
  std::vector<int32_t> syn;
  std::vector<uint64_t> hash1;
};

// An open-addressing map keyed by views of bytes that outlive it (FNV-1a, linear probing): the
// word lists' tables, built at every load (std::unordered_map took most of the load's 40 ms).
template <class V>
class ViewMap {
 public:
  void reserve(size_t n) {
    size_t size = 16;
    while (size < 2 * n) size <<= 1;
    slots_.assign(size, Slot{});
    mask_ = size - 1;
    count_ = 0;
  }
  // k -> v; a key already present keeps its value unless `overwrite`.
  void put(std::string_view k, V v, bool overwrite) {
    if (2 * (count_ + 1) > slots_.size()) grow();
    uint64_t h = hash(k);
    for (size_t i = spot(h);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (!s.used) {
        s = Slot{h, k, v, true};
        ++count_;
        return;
      }
      if (s.h == h && s.k == k) {
        if (overwrite) s.v = v;
        return;
      }
    }
  }
  const V* find(std::string_view k) const {
    if (slots_.empty()) return nullptr;
    uint64_t h = hash(k);
    for (size_t i = spot(h);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (!s.used) return nullptr;
      if (s.h == h && s.k == k) return &s.v;
    }
  }

 private:
  struct Slot {
    uint64_t h = 0;
    std::string_view k;
    V v{};
    bool used = false;
  };
  static uint64_t hash(std::string_view k) {
    uint64_t h = 0xCBF29CE484222325ULL;
    for (unsigned char c : k) h = (h ^ c) * 0x100000001B3ULL;
    return h;
  }
  size_t spot(uint64_t h) const { return static_cast<size_t>(h ^ (h >> 29)) & mask_; }
  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    reserve(old.size() < 16 ? 16 : old.size());
    for (const Slot& s : old)
      if (s.used) put(s.k, s.v, true);
  }
  std::vector<Slot> slots_;
  size_t mask_ = 0, count_ = 0;
};

class Resources {
 public:
  // function_words, exceptions, synsets: the jar's english.words / .exceptions / .synsets.
  // The arrays of `para` must outlive this object.
  Resources(std::string_view function_words, std::string_view exceptions, std::string_view synsets,
            const ParaArrays& para);

  bool is_function(const std::string& w) const { return function_.count(w) != 0; }
  // Synset ids of w or of its base form (sorted, unique).
  std::vector<int32_t> synset_ids(const std::string& w) const;
  int32_t word_id(const std::string& w) const;
  // Appends (length, first, end) for table phrases starting at line[start] (line: n word ids,
  // `first`: the analysis of that word): their paraphrases are grp_par[first .. end), in the
  // transducer's order.
  struct Group {
    int len;
    int64_t first, end;
    const uint64_t* hash;  // the hashes of grp_par[first .. end)
  };
  void groups(const int32_t* line, size_t n, size_t start, const WordInfo& first, std::vector<Group>& out) const;
  const ParaArrays& para() const { return para_; }
  // The analysis of w, computed once and kept (thread-safe; at most kMaxCached words are kept,
  // later ones are computed into `spare`, which must outlive the returned pointer).
  const WordInfo* info(std::string_view w, std::vector<std::unique_ptr<WordInfo>>& spare) const;
  static constexpr size_t kMaxCached = 1 << 20;

 private:
  bool synsets_of(std::string_view w, std::vector<int32_t>& out) const;  // appends w's ids
  std::string morph(const std::string& w) const;
  int32_t phrase(const int32_t* ids, size_t n, uint64_t hash) const;
  bool is_prefix(uint64_t hash) const;

  std::unordered_set<std::string> function_;
  std::unordered_map<std::string, std::vector<std::string>> bases_;
  ViewMap<std::string_view> synsets_;
  ViewMap<int32_t> vocab_;
  ParaArrays para_;
  mutable std::mutex mu_;
  mutable std::unordered_map<std::string, std::unique_ptr<WordInfo>> cache_;
};

// Snowball English (Porter2) stem of a lower-cased UTF-8 word (org.tartarus.snowball's
// englishStemmer, the one the jar uses).
std::string snowball_stem(std::string_view word);

// java.lang.String.hashCode of a UTF-8 word (over its UTF-16 code units).
int32_t java_hash(std::string_view word);

// Statistics of segment i = hyps[i] against refs[ref_off[i] .. ref_off[i+1]) (the best
// reference by score, the first on ties), written to out[i * kStats ...].
void segment_stats(const Resources& res, const std::vector<std::string_view>& hyps,
                   const std::vector<std::string_view>& refs, const int64_t* ref_off, int workers, double* out);

// The jar flavor's cleaning ('|||' out, whitespace folded, trimmed) and the jar's -norm of an ASCII
// text into `out` (pysynth/metrics/_meteor_ref.py's prepare); false, `out` untouched, when the text
// holds a non-ASCII character (the caller normalizes it with the twin). nbp: the nonbreaking
// prefixes (1: any context, 2: before a number).
bool normalize_ascii(std::string_view text, const std::unordered_map<std::string, int>& nbp, std::string& out);

// The jar's computeMetrics on one statistics vector.
double score_from_stats(const double* st);

}  // namespace pysynth::meteor
