// Decoding helpers: the k best candidates of each row of a decoder step, read from the
// step's parts without building the [rows, V + n_ext] log-probability rows.
//
// The Python twin pysynth/decoding/_reference.py::topk_from_parts is the specification;
// this code performs the same float32 operations (one add, one max) on every column, so
// both backends return identical values and ids.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pysynth {
namespace decoding {

// Top k columns of each of the n_rows rows of the virtual matrix (CopyNet Eq. 14-16 in log
// space, see pysynth.models.seq2seq.Seq2Seq.step_parts):
//
//   logp[r, c] = max(ls[r, c] + shift[r], floor)      0 <= c < vocab
//   logp[r, c] = floor                                 vocab <= c < vocab + n_ext
//   logp[r, src_ext[r, j]] = touched[r, j]             j = 0 .. src_len-1, in order (last wins)
//
// (float32 arithmetic; floor = -inf and src_len = n_ext = 0 give plain rows ls + shift).
// Each output row holds the k best columns ordered by value descending, then column
// ascending (the tie rule of ONNX TopK and of the searches).
//
// ls[n_rows * vocab], shift[n_rows], touched / src_ext[n_rows * src_len];
// out_vals / out_idx[n_rows * k].
// Throws std::invalid_argument for k outside [1, vocab + n_ext], a src_ext id outside
// [0, vocab + n_ext) and a NaN among the values (message: row, column and sizes).
void topk_from_parts(const float* ls, const float* shift, const float* touched, const std::int64_t* src_ext,
                     std::size_t n_rows, std::size_t vocab, std::size_t src_len, std::size_t n_ext, std::size_t k,
                     float floor, int workers, float* out_vals, std::int64_t* out_idx);

}  // namespace decoding
}  // namespace pysynth
