"""EchoJob: a kind that exists only in the tests, added to the registry by one entry, to
show what a new kind needs (its own folder and nothing else)."""
