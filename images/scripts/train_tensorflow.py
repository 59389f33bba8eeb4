#!/usr/bin/env python3
"""Trains an MLP on scikit-learn's handwritten digits with TensorFlow's ParameterServerStrategy.

Each process learns its role from TF_CONFIG, as a TFJob sets it: the chief coordinates the
training (it builds the model, whose variables live on the parameter servers, and schedules
steps on the workers); workers and parameter servers run a standard TensorFlow server that
serves their task until they are stopped. Without TF_CONFIG it trains in one process.

The chief prints one line per epoch and `final validation accuracy: X` at the end, then exits
0; its success ends the job.
"""

import argparse
import json
import os
import signal
import sys


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batchsize", type=int, default=32, help="per worker and step")
    parser.add_argument("--units", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=0.1)
    parser.add_argument("--validation-fraction", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def serve(tf, config):
    """A worker or parameter server: serve this task until stopped."""
    task = config["task"]
    server = tf.distribute.Server(
        tf.train.ClusterSpec(config["cluster"]),
        job_name=task["type"],
        task_index=task["index"],
        protocol="grpc",
        start=True,
    )
    print(f"serving {task['type']} {task['index']} at {server.target}", flush=True)
    # As a container's PID 1 this process gets no default SIGTERM action, and server.join()
    # never returns to Python: wait in Python instead, so that deleting the pod (the job is
    # over) ends the server at once rather than after the grace period.
    signal.signal(signal.SIGTERM, lambda signum, frame: os._exit(0))
    while True:
        signal.pause()


def digits(validation_fraction, seed):
    import numpy as np
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    data = load_digits()
    x = (data.data / 16.0).astype(np.float32)
    y = data.target.astype(np.int64)
    return train_test_split(
        x, y, test_size=validation_fraction, random_state=seed, stratify=y
    )


def train(tf, args, strategy, coordinator):
    x_train, x_valid, y_train, y_valid = digits(args.validation_fraction, args.seed)
    tf.random.set_seed(args.seed)

    with strategy.scope():
        initializer = tf.keras.initializers.GlorotUniform(seed=args.seed)
        w1 = tf.Variable(initializer((64, args.units)), name="w1")
        b1 = tf.Variable(tf.zeros([args.units]), name="b1")
        w2 = tf.Variable(initializer((args.units, 10)), name="w2")
        b2 = tf.Variable(tf.zeros([10]), name="b2")
    variables = [w1, b1, w2, b2]

    def logits(x):
        return tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2

    def dataset_fn(_context=None):
        dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train))
        return dataset.shuffle(len(x_train), seed=args.seed).repeat().batch(args.batchsize)

    @tf.function
    def step(iterator):
        x, y = next(iterator)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits(x))
            )
        for variable, gradient in zip(variables, tape.gradient(loss, variables)):
            variable.assign_sub(args.learning_rate * gradient)
        return loss

    if coordinator is not None:
        iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))
    else:
        iterator = iter(dataset_fn())
    steps = max(1, len(x_train) // args.batchsize)
    accuracy = 0.0
    for epoch in range(1, args.epochs + 1):
        if coordinator is not None:
            losses = [coordinator.schedule(step, args=(iterator,)) for _ in range(steps)]
            coordinator.join()
            loss = sum(float(result.fetch()) for result in losses) / steps
        else:
            loss = sum(float(step(iterator)) for _ in range(steps)) / steps
        predicted = tf.argmax(logits(tf.constant(x_valid)), axis=1).numpy()
        accuracy = float((predicted == y_valid).mean())
        print(f"epoch {epoch}/{args.epochs}: loss {loss:.4f}, validation accuracy {accuracy:.4f}",
              flush=True)
    print(f"final validation accuracy: {accuracy:.4f}", flush=True)


def main(argv):
    args = parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    import tensorflow as tf

    task_type = (config.get("task") or {}).get("type")
    if task_type in ("worker", "ps"):
        serve(tf, config)
        return 0
    if config:
        resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
        strategy = tf.distribute.ParameterServerStrategy(resolver)
        coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
        workers = len(config["cluster"].get("worker", []))
        ps = len(config["cluster"].get("ps", []))
        print(f"chief: training with {workers} worker(s) and {ps} parameter server(s)",
              flush=True)
    else:
        strategy, coordinator = tf.distribute.get_strategy(), None
    train(tf, args, strategy, coordinator)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
