"""The compiled parts, the recall kernel (hikmah.recall._scoring), the vectors' arithmetic
(hikmah.semantic._vectors) and the credential detector's needle search (hikmah.model._needles);
pyproject.toml has the rest."""

from setuptools import Extension, setup

# No fused multiply-add: every number is NumPy's arithmetic to the last bit.
FLAGS = ["-O2", "-ffp-contract=off"]

setup(
    ext_modules=[
        Extension(
            name,
            [f"src/hikmah/{source}"],
            depends=["src/include/arrays.h"],
            include_dirs=["src/include"],
            extra_compile_args=FLAGS,
        )
        for name, source in (
            ("hikmah.recall._scoring", "recall/scoring.c"),
            ("hikmah.semantic._vectors", "semantic/vectors.c"),
            ("hikmah.model._needles", "model/needles.c"),
        )
    ]
)
