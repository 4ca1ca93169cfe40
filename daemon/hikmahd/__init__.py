"""hikmahd: the Hikmah daemon. Trio owns every socket, thread and timer here;
the kernel (:mod:`hikmah`) stays pure and synchronous."""

from hikmah import __version__

__all__ = ["__version__"]
