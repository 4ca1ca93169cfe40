"""hikmahd: the Hikmah daemon. Trio owns every socket, thread and timer here;
the kernel (:mod:`hikmah`) stays pure and synchronous."""

import os

# One BLAS thread, set before numpy is first imported: OpenBLAS's default of one
# thread per core spins on two shared cores and made a 20k-row vector search 40x
# slower (docs/semantic.md, "One BLAS thread"). The daemon's threads are its own.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# One OpenMP thread for faiss too (a bulk add of the vectors asks for more itself):
# OpenMP's workers spin between parallel regions, on cores the daemon shares.
os.environ.setdefault("OMP_NUM_THREADS", "1")
# No thread pool in Hugging Face's tokenizers either (the MiniLM extra batches through
# it; WordLlama's words are tokenized one at a time): woken for a writer's batch of a
# few texts, its spinning workers doubled the daemon's CPU a write (docs/performance.md).
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from hikmah import __version__

__all__ = ["__version__"]
