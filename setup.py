"""The compiled parts, the recall kernel (hikmah._scoring), the vectors' arithmetic
(hikmah._vectors) and the credential detector's needle search (hikmah._needles);
pyproject.toml has the rest."""

from setuptools import Extension, setup

# No fused multiply-add: every number is NumPy's arithmetic to the last bit.
FLAGS = ["-O2", "-ffp-contract=off"]

setup(
    ext_modules=[
        Extension(
            name,
            [f"src/hikmah/{source}"],
            depends=["src/hikmah/arrays.h"],
            extra_compile_args=FLAGS,
        )
        for name, source in (
            ("hikmah._scoring", "scoring.c"),
            ("hikmah._vectors", "vectors.c"),
            ("hikmah._needles", "needles.c"),
        )
    ]
)
