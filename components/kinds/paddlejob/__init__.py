"""PaddleJob: Paddle's launcher on every pod, meeting at the address its environment names."""
