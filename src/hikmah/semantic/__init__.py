"""The semantic channel: the embedding model, its vectors and their index."""
