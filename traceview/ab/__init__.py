"""The A/B harness: two variants of one call, in interleaved fresh processes."""
