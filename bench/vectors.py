"""Vector search for the semantic channel: brute force, the kernel's own index, and ANN
libraries side by side.

    .venv/bin/python bench/vectors.py [--size 100000] [--queries 300] \
        [--libs brute,hikmah,faiss-ivf[,usearch,hnswlib]]

``usearch`` and ``hnswlib`` were measured against faiss when the index was chosen
(docs/semantic.md) and are no dependency: ``.venv/bin/pip install usearch hnswlib``
to compare them again.

The corpus is the suite's developer notes (``workload.iter_notes``, seed 7)
embedded with the default embedder (WordLlama, 256-d; cached under
``$TMPDIR/hikmah-bench-vectors``); queries are the first five words of notes
past the corpus. Ground truth is exact float32 cosine top 10. For each
engine: build time, the cost of adding and removing 1,000 vectors, single
query p50/p95 on one thread, recall@10 against the ground truth, memory,
file size, load time (read, and memory-mapped where the library can), and
whether a removed vector's bytes are still in the saved file.

Numbers go to stdout as one JSON object per engine and configuration.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

# One BLAS thread, as the daemon runs it: two threads on two shared cores spin
# against each other and make a 20k gemv 40x slower.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import workload

from hikmah.semantic.embedding import WordLlamaEmbedder
from hikmah.semantic.quantize import dequantize, quantize
from tests.harness.stats import percentile

K = 10
F32 = npt.NDArray[np.float32]
CACHE = Path(tempfile.gettempdir()) / "hikmah-bench-vectors"


def corpus(size: int, queries: int) -> tuple[F32, F32]:
    """Embedded notes and queries, cached by size."""
    CACHE.mkdir(exist_ok=True)
    path = CACHE / f"notes-{size}-{queries}.npz"
    if path.exists():
        data = np.load(path)
        return data["x"], data["q"]
    embedder = WordLlamaEmbedder()
    notes = itertools.islice(workload.iter_notes(7), size + queries)
    texts = [n.content for n in notes]
    started = time.perf_counter()
    x = np.concatenate([embedder.embed(texts[i : i + 10_000]) for i in range(0, size, 10_000)])
    print(
        json.dumps({"embed_ms_per_note": 1000 * (time.perf_counter() - started) / size}),
        flush=True,
    )
    q = embedder.embed([" ".join(t.split()[:5]) for t in texts[size:]])
    np.savez(path, x=x, q=q)
    return x, q


def truth(x: F32, q: F32) -> npt.NDArray[np.int64]:
    out = np.empty((len(q), K), dtype=np.int64)
    for i in range(0, len(q), 64):
        sims = q[i : i + 64] @ x.T
        top = np.argpartition(-sims, K, axis=1)[:, :K]
        order = np.argsort(-np.take_along_axis(sims, top, axis=1), axis=1)
        out[i : i + 64] = np.take_along_axis(top, order, axis=1)
    return out


def recall_at_k(
    found: list[npt.NDArray[np.int64]], expected: npt.NDArray[np.int64], pool: int = K
) -> float:
    """The share of the exact top 10 in the first ``pool`` found."""
    hits = [
        len(set(f[:pool].tolist()) & set(e.tolist())) for f, e in zip(found, expected, strict=True)
    ]
    return sum(hits) / (K * len(expected))


POOL = 50  # the semantic candidates a fused recall takes (docs/evaluation.md)


def timed(
    run: Callable[[F32], npt.NDArray[np.int64]], q: F32
) -> tuple[list[Any], dict[str, float]]:
    for row in q[:20]:
        run(row)
    found, times = [], []
    for row in q:
        started = time.perf_counter()
        found.append(run(row))
        times.append(1000 * (time.perf_counter() - started))
    times.sort()
    return found, {
        "query_p50_ms": statistics.median(times),
        "query_p95_ms": percentile(times, 95),
    }


def seconds(call: Callable[[], object]) -> float:
    """How long ``call()`` took."""
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        line = next(x for x in status if x.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def residue(path: Path, secret: bytes) -> bool:
    return path.read_bytes().find(secret) >= 0


def emit(**row: Any) -> None:
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}))
    sys.stdout.flush()


def brute(x: F32, q: F32, expected: npt.NDArray[np.int64]) -> None:
    codes, scales = quantize(x)
    error = np.abs(np.einsum("ij,ij->i", dequantize(codes, scales), x[::1]) - 1)
    cos_err = np.abs((q[:50] @ dequantize(codes, scales).T) - (q[:50] @ x.T))
    emit(
        engine="quantize-int8",
        size=len(x),
        self_cos_error_mean=float(error.mean()),
        cos_error_mean=float(cos_err.mean()),
        cos_error_max=float(cos_err.max()),
        bytes_per_vector=codes.shape[1] + 4,
    )

    def flat(row: F32) -> npt.NDArray[np.int64]:
        sims = x @ row
        top = np.argpartition(-sims, K)[:K]
        return top[np.argsort(-sims[top])]

    def int8(row: F32, chunk: int = 16384) -> npt.NDArray[np.int64]:
        parts = [
            (codes[i : i + chunk].astype(np.float32) @ row) * scales[i : i + chunk]
            for i in range(0, len(codes), chunk)
        ]
        sims = np.concatenate(parts)
        top = np.argpartition(-sims, K)[:K]
        return top[np.argsort(-sims[top])]

    for name, run in (("brute-float32", flat), ("brute-int8", int8)):
        found, timing = timed(run, q)
        emit(engine=name, size=len(x), recall_at_10=recall_at_k(found, expected), **timing)


def bench_usearch(x: F32, q: F32, expected: npt.NDArray[np.int64], tmp: Path) -> None:
    from usearch.index import Index  # noqa: PLC0415 -- each library only when asked for

    for dtype in ("i8",):
        before = rss_mb()
        index = Index(ndim=x.shape[1], metric="cos", dtype=dtype, connectivity=16,
                      expansion_add=128)  # fmt: skip
        started = time.perf_counter()
        index.add(np.arange(len(x) - 1000), x[:-1000], threads=2)
        build = time.perf_counter() - started
        started = time.perf_counter()
        for i in range(len(x) - 1000, len(x)):
            index.add(i, x[i], threads=1)
        add_ms = 1000 * (time.perf_counter() - started) / 1000
        memory = rss_mb() - before
        for ef in (32, 64, 128):
            index.expansion_search = ef
            found, timing = timed(
                lambda r, i=index: i.search(r, K, threads=1).keys.astype(np.int64), q
            )
            pool, _ = timed(
                lambda r, i=index: i.search(r, POOL, threads=1).keys.astype(np.int64), q
            )
            emit(engine=f"usearch-hnsw-{dtype}", size=len(x), ef_search=ef, build_s=build,
                 add_ms_each=add_ms, memory_mb=memory, recall_at_10=recall_at_k(found, expected),
                 top10_in_top50=recall_at_k(pool, expected, POOL), **timing)  # fmt: skip
        victims = np.arange(1000) * (len(x) // 1000)
        secret = index.get(int(victims[0]), dtype=np.int8).tobytes()
        started = time.perf_counter()
        index.remove(victims)
        remove_ms = 1000 * (time.perf_counter() - started) / 1000
        path = tmp / "usearch.bin"
        save = seconds(partial(index.save, str(path)))
        del index
        gc.collect()
        started = time.perf_counter()
        loaded = Index.restore(str(path))
        load = time.perf_counter() - started
        started = time.perf_counter()
        viewed = Index.restore(str(path), view=True)
        view = time.perf_counter() - started
        assert loaded is not None and viewed is not None
        emit(engine=f"usearch-hnsw-{dtype}", size=len(x), remove_ms_each=remove_ms,
             save_s=save, file_mb=path.stat().st_size / 2**20, load_s=load, view_s=view,
             removed_bytes_in_file=residue(path, secret))  # fmt: skip
        del loaded, viewed
        gc.collect()


def bench_hnswlib(x: F32, q: F32, expected: npt.NDArray[np.int64], tmp: Path) -> None:
    import hnswlib  # noqa: PLC0415

    before = rss_mb()
    index = hnswlib.Index(space="ip", dim=x.shape[1])
    index.init_index(max_elements=len(x), M=16, ef_construction=128, allow_replace_deleted=True)
    index.set_num_threads(2)
    started = time.perf_counter()
    index.add_items(x[:-1000], np.arange(len(x) - 1000))
    build = time.perf_counter() - started
    index.set_num_threads(1)
    started = time.perf_counter()
    for i in range(len(x) - 1000, len(x)):
        index.add_items(x[i : i + 1], [i])
    add_ms = 1000 * (time.perf_counter() - started) / 1000
    memory = rss_mb() - before
    for ef in (32, 64, 128):
        index.set_ef(ef)
        found, timing = timed(lambda r, i=index: i.knn_query(r, K)[0][0].astype(np.int64), q)
        pool, _ = timed(lambda r, i=index: i.knn_query(r, POOL)[0][0].astype(np.int64), q)
        emit(engine="hnswlib-hnsw-f32", size=len(x), ef_search=ef, build_s=build,
             add_ms_each=add_ms, memory_mb=memory, recall_at_10=recall_at_k(found, expected),
             top10_in_top50=recall_at_k(pool, expected, POOL), **timing)  # fmt: skip
    victims = np.arange(1000) * (len(x) // 1000)
    secret = x[victims[0]].tobytes()
    started = time.perf_counter()
    for v in victims:
        index.mark_deleted(int(v))
    remove_ms = 1000 * (time.perf_counter() - started) / 1000
    path = tmp / "hnswlib.bin"
    save = seconds(partial(index.save_index, str(path)))
    del index
    gc.collect()
    loaded = hnswlib.Index(space="ip", dim=x.shape[1])
    load = seconds(partial(loaded.load_index, str(path), max_elements=len(x)))
    emit(engine="hnswlib-hnsw-f32", size=len(x), remove_ms_each=remove_ms, save_s=save,
         file_mb=path.stat().st_size / 2**20, load_s=load,
         removed_bytes_in_file=residue(path, secret))  # fmt: skip
    del loaded
    gc.collect()


def bench_faiss_ivf(x: F32, q: F32, expected: npt.NDArray[np.int64], tmp: Path) -> None:
    import faiss  # noqa: PLC0415

    faiss.omp_set_num_threads(2)
    nlist = 1024 if len(x) <= 200_000 else 4096
    before = rss_mb()
    quantizer = faiss.IndexFlatIP(x.shape[1])
    index = faiss.IndexIVFScalarQuantizer(
        quantizer, x.shape[1], nlist, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
    )
    index.set_direct_map_type(faiss.DirectMap.Hashtable)
    started = time.perf_counter()
    sample = x[np.random.default_rng(1).choice(len(x), min(len(x), 64 * nlist), replace=False)]
    index.train(sample)
    train = time.perf_counter() - started
    started = time.perf_counter()
    index.add_with_ids(x[:-1000], np.arange(len(x) - 1000, dtype=np.int64))
    build = time.perf_counter() - started + train
    faiss.omp_set_num_threads(1)
    started = time.perf_counter()
    for i in range(len(x) - 1000, len(x)):
        index.add_with_ids(x[i : i + 1], np.array([i], dtype=np.int64))
    add_ms = 1000 * (time.perf_counter() - started) / 1000
    memory = rss_mb() - before
    for nprobe in (8, 16, 32, 64):
        index.nprobe = nprobe
        found, timing = timed(lambda r, i=index: i.search(r[None, :], K)[1][0], q)
        emit(engine="faiss-ivf-sq8", size=len(x), nlist=nlist, nprobe=nprobe, train_s=train,
             build_s=build, add_ms_each=add_ms, memory_mb=memory,
             recall_at_10=recall_at_k(found, expected), **timing)  # fmt: skip
    victims = np.arange(1000, dtype=np.int64) * (len(x) // 1000)
    where = index.direct_map.get(int(victims[0]))  # list number << 32 | offset
    codes = index.invlists.get_single_code(where >> 32, where & 0xFFFF_FFFF)
    secret = faiss.rev_swig_ptr(codes, index.code_size).tobytes()
    started = time.perf_counter()
    index.remove_ids(victims)
    remove_ms = 1000 * (time.perf_counter() - started) / 1000
    path = tmp / "faiss.ivf"
    started = time.perf_counter()
    faiss.write_index(index, str(path))
    save = time.perf_counter() - started
    del index
    gc.collect()
    started = time.perf_counter()
    loaded = faiss.read_index(str(path))
    load = time.perf_counter() - started
    started = time.perf_counter()
    mapped = faiss.read_index(str(path), faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY)
    view = time.perf_counter() - started
    emit(engine="faiss-ivf-sq8", size=len(x), remove_ms_each=remove_ms, save_s=save,
         file_mb=path.stat().st_size / 2**20, load_s=load, view_s=view,
         removed_bytes_in_file=residue(path, secret))  # fmt: skip
    del loaded, mapped
    gc.collect()


def bench_hikmah(x: F32, q: F32, expected: npt.NDArray[np.int64], tmp: Path) -> None:
    """The kernel's own index (hikmah.semantic.vector_index) of the kind ``[semantic] ann_at``
    picks for this many vectors, as the daemon keeps it (the graph built on two threads)."""
    from hikmah.model.policy import SemanticPolicy  # noqa: PLC0415
    from hikmah.semantic.vector_index import FlatIndex, HnswIndex, restore_index  # noqa: PLC0415

    stamp = WordLlamaEmbedder().stamp
    before = rss_mb()
    started = time.perf_counter()
    if len(x) >= SemanticPolicy().ann_at:
        graph = HnswIndex(stamp)
        graph.add(np.arange(len(x) - 1000), x[:-1000], threads=2)
        index: FlatIndex | HnswIndex = graph
    else:
        index = FlatIndex(stamp)
        index.add(np.arange(len(x) - 1000), x[:-1000])
    build = time.perf_counter() - started
    started = time.perf_counter()
    for i in range(len(x) - 1000, len(x)):
        index.add([i], x[i : i + 1])
    add_ms = 1000 * (time.perf_counter() - started) / 1000
    memory = rss_mb() - before
    found, timing = timed(lambda r, i=index: i.search(r, K).ids.astype(np.int64), q)
    half, filtered = timed(
        lambda r, i=index: i.search(r, K, allowed=lambda ids: ids % 2 == 0).ids.astype(np.int64),
        q,
    )
    victims = np.arange(1000) * (len(x) // 1000)
    started = time.perf_counter()
    for v in victims:
        index.remove([v])
    remove_ms = 1000 * (time.perf_counter() - started) / 1000
    path = tmp / "hikmah.vec"
    save = seconds(partial(path.write_bytes, index.dump()))
    kind = index.kind
    del index
    gc.collect()
    started = time.perf_counter()
    loaded = restore_index(kind, stamp, path.read_bytes())
    load = time.perf_counter() - started
    gone = not set(victims.tolist()) & set(loaded.ids().tolist())
    emit(engine=f"hikmah-{kind}", size=len(x), build_s=build, add_ms_each=add_ms,
         remove_ms_each=remove_ms, memory_mb=memory, recall_at_10=recall_at_k(found, expected),
         filtered_p50_ms=filtered["query_p50_ms"], filtered_p95_ms=filtered["query_p95_ms"],
         save_s=save, file_mb=path.stat().st_size / 2**20, load_s=load,
         removed_not_found=gone, **timing)  # fmt: skip
    del loaded, half
    gc.collect()


ENGINES = {
    "hikmah": bench_hikmah,
    "usearch": bench_usearch,
    "hnswlib": bench_hnswlib,
    "faiss-ivf": bench_faiss_ivf,
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--libs", default="brute,hikmah,faiss-ivf")
    args = parser.parse_args()
    x, q = corpus(args.size, args.queries)
    expected = truth(x, q)
    libs = args.libs.split(",")
    with tempfile.TemporaryDirectory(prefix="hikmah-vec-") as tmp:
        if "brute" in libs:
            brute(x, q, expected)
        for name in libs:
            if name in ENGINES:
                ENGINES[name](x, q, expected, Path(tmp))
    os.sync()


if __name__ == "__main__":
    main()
