"""The JSON-RPC methods of hikmahd, one module per wire namespace (``memory.*`` in three:
the trace itself, learning, transfer); each registers on its own :class:`~hikmahd.rpc.Registry`,
and the composition root (:mod:`hikmahd.daemon`) serves them all."""
