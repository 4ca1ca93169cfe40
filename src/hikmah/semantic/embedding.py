"""Text embedders for the semantic recall channel: texts in, unit vectors out.

An :class:`Embedder` has a name, a version and a number of dimensions (its
:class:`ModelStamp`, which every persisted vector carries so that a model
change is detected and the vectors rebuilt) and embeds a batch of texts into
float32 rows of length 1. A blank text embeds to the zero row: it is
similar to nothing.

The light model, :class:`WordLlamaEmbedder`, is the static ``l2_supercat`` model
whose weights and tokenizer ship inside the ``wordllama`` wheel. It is read
straight from those files with ``tokenizers`` and ``safetensors`` (both
dependencies of ``wordllama``), so no code path that can download is ever
entered: ``WordLlama.load()`` looks for ``tokenizer/`` where the wheel ships
``tokenizers/`` and falls back to the network. The vectors are the ones
``WordLlama.embed(norm=True)`` gives (a test compares them).

Transformer sentence encoders (:mod:`hikmah.semantic.encoder`) are the other kind;
:mod:`hikmah.semantic.models` names every model a policy may choose.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import msgspec
import numpy as np
import numpy.typing as npt

from hikmah.model.errors import PolicyError
from hikmah.semantic import _vectors

Vectors = npt.NDArray[np.float32]

# Static models cost one lookup per token; a long trace is capped so that one
# embedding stays a fraction of a millisecond and the batch buffer small.
MAX_TOKENS = 2048

# Words tokenized once and remembered (WordTokens): at most this many, none longer than
# WORD_CACHED characters (a long word is rare, and would only fill the cache).
WORD_CACHE = 1 << 16
WORD_CACHED = 40
METASPACE = "\u2581"  # SentencePiece's space
# A word as WordLlama's model sees it: a run of spaces, then what follows up to the next.
_WORD = re.compile(f"{METASPACE}+[^{METASPACE}]*")


class EmbedderUnavailable(PolicyError):
    """The model the policy names is unknown, or its package or files are not installed."""


class ModelStamp(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What produced a set of vectors: vectors of different stamps never mix."""

    name: str
    version: str
    dimensions: int


@runtime_checkable
class Embedder(Protocol):
    """A text embedding model."""

    @property
    def stamp(self) -> ModelStamp:
        """The model's name, version and dimensions."""
        ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Unit vectors for ``texts`` (what is stored): shape ``(len(texts), dimensions)``,
        float32. A blank text gets the zero row.
        """
        ...

    def embed_query(self, text: str) -> Vectors:
        """The unit vector of a query (some models embed questions apart from passages);
        the zero vector for a blank one."""
        ...

    def passages(self, text: str) -> list[str]:
        """The parts of a stored text that each get a vector: the text itself, or a long
        text's overlapping windows (a document is as similar as its best one); none for
        a blank text."""
        ...


def normalize_rows(rows: npt.NDArray[np.floating]) -> Vectors:
    """``rows`` scaled to length 1 as float32; rows of length 0 stay 0."""
    out = np.asarray(rows, dtype=np.float32)
    if len(out) == 1:  # a query: the same sums (NumPy's pairwise) in a third of the calls
        norm = np.sqrt(np.add.reduce(out[0] * out[0]))
        return out / norm if norm > 0 else np.zeros_like(out)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    unit: Vectors = np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)
    return unit


class WordLlamaEmbedder:
    """WordLlama ``l2_supercat``: average of static token vectors, from the wheel's files.

    Args:
        dimensions: 64, 128 or 256 (the model is Matryoshka-trained, so a prefix
            of the 256 dimensions is itself a model).

    Raises:
        EmbedderUnavailable: ``wordllama`` is not installed or its files are missing.
    """

    NAME = "wordllama-l2-supercat"
    DIMENSIONS = (64, 128, 256)

    def __init__(self, dimensions: int = 256) -> None:
        if dimensions not in self.DIMENSIONS:
            raise ValueError(f"wordllama dimensions must be one of {self.DIMENSIONS}")
        # Imported here: only a daemon with the channel on pays for them (130 ms).
        from safetensors.numpy import load_file  # noqa: PLC0415
        from tokenizers import Tokenizer  # noqa: PLC0415

        root = package_dir("wordllama")
        tokenizer_file = root / "tokenizers" / "l2_supercat_tokenizer_config.json"
        weights_file = root / "weights" / "l2_supercat_256.safetensors"
        for path in (tokenizer_file, weights_file):
            if not path.is_file():
                raise EmbedderUnavailable(f"wordllama is installed without {path.name}")
        self._tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        # In float32, though the file has float16: summing float16 rows cost three times
        # as much (41 against 14 us a short text), for 16 MB more.
        table = load_file(str(weights_file))["embedding.weight"]
        if self._tokenizer.get_vocab_size(with_added_tokens=True) > len(table):
            raise EmbedderUnavailable("wordllama's tokenizer has tokens its weights lack")
        self._flat = np.ascontiguousarray(table[:, :dimensions], dtype=np.float32).reshape(-1)
        self._words = WordTokens.of(self._tokenizer)
        self._stamp = ModelStamp(
            name=self.NAME, version=installed_version("wordllama"), dimensions=dimensions
        )

    @property
    def stamp(self) -> ModelStamp:
        return self._stamp

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self._stamp.dimensions), dtype=np.float32)
        dimensions = self._stamp.dimensions
        for row, text in enumerate(texts):
            if text.strip():
                ids = self._token_ids(text)[:MAX_TOKENS]
                # The rows summed and scaled to length 1 as normalize_rows would, in C.
                _vectors.unit_sum(self._flat, dimensions, ids, out[row])
        return out

    def embed_query(self, text: str) -> Vectors:
        vector: Vectors = self.embed([text])[0]
        return vector

    def passages(self, text: str) -> list[str]:
        # An average of token vectors reads the whole text (up to MAX_TOKENS) at once.
        return [text] if text.strip() else []

    def _token_ids(self, text: str) -> list[int]:
        if self._words is not None:
            found = self._words(text)
            if found is not None:
                return found
        ids: list[int] = self._tokenizer.encode(text, add_special_tokens=False).ids
        return ids


class WordTokens:
    """A text's token ids for a tokenizer like WordLlama's, a word at a time, each word
    tokenized once and remembered: 2 us a short text instead of 7-14 (a writer's batch,
    a query).

    WordLlama's tokenizer (LLaMA 2's) has no pre-tokenizer: it turns every space
    into ``▁``, puts one in front and runs BPE over the whole text. No token
    holds a ``▁`` after another character, so no merge crosses the start of
    a word (a run of ``▁`` and what follows up to the next), and a text's
    tokens are its words' tokens in order. :meth:`of` checks the tokenizer is
    of that kind (its normalizer, model and vocabulary), since the argument
    rests on it.
    """

    def __init__(self, model: Any, specials: Sequence[str]) -> None:
        self._model = model  # the tokenizer's BPE model: a word's tokens, no normalizing
        self._specials = tuple(specials)
        self._ids: dict[str, list[int]] = {}

    @classmethod
    def of(cls, tokenizer: Any) -> WordTokens | None:
        """Word tokens for ``tokenizer``, or None when it is not of that kind."""
        config = json.loads(tokenizer.to_str())
        prepend = {"type": "Prepend", "prepend": METASPACE}
        spaces = {"type": "Replace", "pattern": {"String": " "}, "content": METASPACE}
        model = config.get("model") or {}
        kind = (
            config.get("normalizer") == {"type": "Sequence", "normalizers": [prepend, spaces]}
            and config.get("pre_tokenizer") is None
            and model.get("type") == "BPE"
            and model.get("dropout") is None
            and not any(METASPACE in token.lstrip(METASPACE) for token in model["vocab"])
            and not any(added.get("normalized") for added in config.get("added_tokens", []))
        )
        if not kind:
            return None
        return cls(tokenizer.model, [t["content"] for t in config.get("added_tokens", [])])

    def __call__(self, text: str) -> list[int] | None:
        """The ids ``tokenizer.encode(text, add_special_tokens=False)`` gives; None for a
        text holding a special token's name, which the tokenizer matches on its own."""
        if any(special in text for special in self._specials):
            return None
        ids: list[int] = []
        if not text:
            return ids  # the normalizer puts its space in front of something only
        known = self._ids
        for word in _WORD.findall(METASPACE + text.replace(" ", METASPACE)):
            found = known.get(word)
            if found is None:
                found = [token.id for token in self._model.tokenize(word)]
                if len(word) <= WORD_CACHED:
                    if len(known) >= WORD_CACHE:
                        known.clear()  # bounded: a long-running daemon meets many words
                    known[word] = found
            ids += found
        return ids


def package_dir(package: str) -> Path:
    """Where an installed (top-level) package's files are, without importing it.

    Raises:
        EmbedderUnavailable: it is not installed.
    """
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):  # a broken or half-removed install
        spec = None
    if spec is None or spec.origin is None:
        raise EmbedderUnavailable(f"the {package} package is not installed")
    return Path(spec.origin).parent


def installed_version(distribution: str) -> str:
    """The installed version of ``distribution`` ("unknown" when it has no metadata)."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
