"""A local Hugging Face causal LM folder as an LLM backend (``hf-causal:DIR``; transformers and torch, imported here).

The prompt goes through the tokenizer's chat template when it has one (as a user message, with
the generation prompt), else as it is. Greedy and beam search run batched (``concurrency``
prompts per batch, left padding); sampling runs one prompt at a time under the prompt's own seed,
so a prompt's samples do not depend on which prompts share its batch. Stop strings cut the
decoded text. Nothing is downloaded (``local_files_only``).
"""
from __future__ import annotations

from typing import Callable, List, Optional, Sequence

from pysynth.llm.openai import Reply, apply_stop
from pysynth.llm.params import LLMParams, Spec

__all__ = ["HFCausalBackend"]


class HFCausalBackend:
    """A local causal LM (``AutoModelForCausalLM`` + its tokenizer).

    Parameters
    ----------
    spec : Spec
        ``backend == "hf-causal"``.
    concurrency : int
        Prompts per batch (greedy and beam search).
    device : str, optional
        A torch device (default CPU).
    """

    name = "hf-causal"

    def __init__(self, spec: Spec, concurrency: int = 4, device: Optional[str] = None):
        try:
            import torch  # noqa: F401
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:
            raise ImportError(f"hf-causal: a local causal LM needs torch and transformers ({exc.name} is missing): "
                              'pip install ".[llm]"') from None
        self.spec, self.batch = spec, int(concurrency)
        self.tok = AutoTokenizer.from_pretrained(spec.base_url, local_files_only=True)
        self.tok.padding_side = "left"  # generation continues every row at the same position
        if self.tok.pad_token_id is None:
            self.tok.pad_token = self.tok.eos_token
        self.lm = AutoModelForCausalLM.from_pretrained(spec.base_url, local_files_only=True).eval()
        if device:
            self.lm.to(device)
        self.count: Callable[[str, int], None] = lambda name, k=1: None

    @property
    def model(self) -> str:
        return self.spec.model

    def render(self, prompt: str) -> str:
        """The text the model reads: the chat template's rendering when the tokenizer has one."""
        if getattr(self.tok, "chat_template", None):
            return self.tok.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                                add_generation_prompt=True)
        return prompt

    def complete_many(self, prompts: Sequence[str], params: LLMParams, seeds: Sequence[int],
                      on_reply: Callable[[int, Reply], None]) -> None:
        if params.temperature > 0:  # sampling: each prompt under its own seed
            for i, p in enumerate(prompts):
                on_reply(i, self._generate([p], params, seeds[i])[0])
            return
        for b in range(0, len(prompts), self.batch):
            for j, r in enumerate(self._generate(list(prompts[b:b + self.batch]), params, None)):
                on_reply(b + j, r)

    def _generate(self, prompts: List[str], params: LLMParams, seed: Optional[int]) -> List[Reply]:
        import torch

        enc = self.tok([self.render(p) for p in prompts], return_tensors="pt", padding=True,
                       add_special_tokens=not getattr(self.tok, "chat_template", None))
        enc = {k: v.to(self.lm.device) for k, v in enc.items()}
        kw = dict(max_new_tokens=params.max_new_tokens, pad_token_id=self.tok.pad_token_id)
        if params.temperature > 0:
            torch.manual_seed(int(seed) % (2 ** 63))
            kw.update(do_sample=True, temperature=params.temperature, top_p=params.top_p,
                      num_return_sequences=params.n)
            n = params.n
        else:
            beams = max(params.beams, params.n)
            kw.update(do_sample=False, num_beams=beams, num_return_sequences=min(params.n, beams))
            n = min(params.n, beams)
        self.count("requests", len(prompts))
        with torch.inference_mode():
            out = self.lm.generate(**enc, **kw)
        width = enc["input_ids"].shape[1]
        gen = out[:, width:]
        eos = self.tok.eos_token_id
        replies = []
        for i in range(len(prompts)):
            texts, ct = [], 0
            for row in gen[i * n:(i + 1) * n].tolist():
                toks = []
                for t in row:
                    if t == eos or t == self.tok.pad_token_id and eos is None:
                        break
                    toks.append(t)
                ct += len(toks)
                texts.append(apply_stop(self.tok.decode(toks, skip_special_tokens=True), params.stop))
            pt = int(enc["attention_mask"][i].sum())
            replies.append(Reply(texts=texts, refused=False, prompt_tokens=pt, completion_tokens=ct))
        return replies
