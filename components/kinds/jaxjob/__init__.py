"""JAXJob: `jax.distributed.initialize` on every Worker, coordinated by Worker 0."""
