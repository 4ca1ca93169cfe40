"""Working memory: the promise queue and focus capsules."""
