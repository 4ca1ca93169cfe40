"""Learning from what happens: consolidation, ingest, calibration, verification, invalidation."""
