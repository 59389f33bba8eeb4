#!/usr/bin/env python3
"""MNIST-style MLP classifier in JAX, data-parallel over the processes of a JAXJob.

Every pod of a JAXJob runs it. `jax.distributed.initialize` takes what the JAXJob sets
(training-operator's pkg/controller.v1/jax/envvar.go): COORDINATOR_ADDRESS and
COORDINATOR_PORT (Worker 0's Service and its jaxjob-port), NUM_PROCESSES and PROCESS_ID.
CPU collectives go over gloo. Each process holds one CPU device, trains on its shard of the
training set, and `pmap` averages the gradients over every device of every process
(`lax.pmean`), so all processes hold the same parameters after every update. Without
NUM_PROCESSES it trains in one process.

The data are scikit-learn's bundled handwritten digits (8x8 images, 1797 samples): real, and
available offline. Only process 0 prints; the last line is `final validation accuracy: X`.
"""

import argparse
import math
import os
import sys

import numpy as np


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batchsize", type=int, default=32, help="per process")
    parser.add_argument("--units", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=0.1, help="SGD's step")
    parser.add_argument("--validation-fraction", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def load_data(validation_fraction, seed):
    """(train images, train labels, validation images, validation labels); the same split on
    every process (a fixed seed)."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    order = np.random.RandomState(seed).permutation(len(digits.target))
    cut = int(len(order) * (1 - validation_fraction))
    train, validation = order[:cut], order[cut:]
    images = (digits.data / 16.0).astype(np.float32)
    return images[train], digits.target[train], images[validation], digits.target[validation]


def main(argv):
    args = parse_args(argv)
    import jax
    import jax.numpy as jnp

    if "NUM_PROCESSES" in os.environ:
        # Collectives between processes on CPU go over gloo (it needs the distributed
        # client, so a single process keeps the default).
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(
            coordinator_address=(
                f"{os.environ['COORDINATOR_ADDRESS']}:{os.environ['COORDINATOR_PORT']}"
            ),
            num_processes=int(os.environ["NUM_PROCESSES"]),
            process_id=int(os.environ["PROCESS_ID"]),
        )
    rank, size = jax.process_index(), jax.process_count()

    def say(message):
        if rank == 0:
            print(message, flush=True)

    train_x, train_y, valid_x, valid_y = load_data(args.validation_fraction, args.seed)
    say(f"training on {size} process(es), {jax.device_count()} device(s) (JAX {jax.__version__}"
        f", gloo): digits, {len(train_y)} training and {len(valid_y)} validation samples")
    shard_x, shard_y = train_x[rank::size], train_y[rank::size]

    def init(key):
        sizes = [train_x.shape[1], args.units, args.units, 10]
        keys = jax.random.split(key, len(sizes) - 1)
        return [(jax.random.normal(k, (m, n)) * math.sqrt(2.0 / m), jnp.zeros(n))
                for k, m, n in zip(keys, sizes[:-1], sizes[1:])]

    def logits(params, x):
        for weights, bias in params[:-1]:
            x = jax.nn.relu(x @ weights + bias)
        weights, bias = params[-1]
        return x @ weights + bias

    def loss(params, x, y):
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits(params, x)),
                                             y[:, None], axis=1))

    def update(params, x, y):
        value, grads = jax.value_and_grad(loss)(params, x, y)
        # The mean over every device of every process: all processes take the same step.
        grads = jax.lax.pmean(grads, "devices")
        value = jax.lax.pmean(value, "devices")
        return jax.tree_util.tree_map(lambda p, g: p - args.learning_rate * g, params,
                                      grads), value

    step = jax.pmap(update, axis_name="devices")
    local = jax.local_device_count()
    # The same initial parameters everywhere (a fixed key), one copy per local device.
    params = jax.device_put_replicated(init(jax.random.PRNGKey(args.seed)), jax.local_devices())
    generator = np.random.RandomState(args.seed + rank)
    # Every update is a collective, so every process runs the same number of them: the count
    # comes from the global training-set size, not from the local shard.
    updates = max(1, math.ceil(len(train_y) / (args.batchsize * size)))
    accuracy = 0.0
    for epoch in range(1, args.epochs + 1):
        order = generator.permutation(len(shard_y))
        losses = []
        for index in range(updates):
            batch = order[index * args.batchsize:(index + 1) * args.batchsize]
            if len(batch) < args.batchsize:  # a shorter shard: top up from its start
                batch = np.concatenate([batch, order[:args.batchsize - len(batch)]])
            x = shard_x[batch].reshape(local, -1, train_x.shape[1])
            y = shard_y[batch].reshape(local, -1)
            params, value = step(params, x, y)
            losses.append(float(value[0]))
            if epoch == 1 and index == 0:
                say(f"first iteration: loss {losses[0]:.4f}")
        single = jax.tree_util.tree_map(lambda p: p[0], params)
        predicted = np.asarray(logits(single, valid_x)).argmax(axis=1)
        accuracy = float((predicted == valid_y).mean())
        say(f"epoch {epoch}/{args.epochs}: loss {np.mean(losses):.4f}, "
            f"validation accuracy {accuracy:.4f}")
    say(f"final validation accuracy: {accuracy:.4f}")
    if size > 1:
        jax.distributed.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
