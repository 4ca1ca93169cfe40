"""The one compiled part, the recall kernel (hikmah._scoring); pyproject.toml has the rest."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "hikmah._scoring",
            ["src/hikmah/scoring.c"],
            # No fused multiply-add: a score is NumPy's arithmetic to the last bit.
            extra_compile_args=["-O2", "-ffp-contract=off"],
        )
    ]
)
