"""Recall: ranking the traces a query finds, by terms, meaning and weight."""
