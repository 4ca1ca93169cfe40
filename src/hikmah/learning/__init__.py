"""Learning from what happens: consolidation, ingest, calibration, invalidation."""
