"""The wire: every JSON-RPC method's ``…Params`` and ``…Result``, one module per namespace.

The daemon decodes each method's params with its Params type and answers with its
Result; the clients build their requests and decode the replies with the same types,
so a reply's shape is defined once. Nothing here loads the store: any client imports it.
"""
