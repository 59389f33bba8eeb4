#!/usr/bin/env python3
"""MNIST-style MLP classifier in PaddlePaddle, data-parallel in Paddle's collective mode.

Every pod of a PaddleJob runs `python -m paddle.distributed.launch /train_paddle.py`. The
launcher reads what the PaddleJob sets (training-operator's
pkg/controller.v1/paddlepaddle/envvar.go): PADDLE_MASTER (Worker 0's address and its `master`
port: there Worker 0 serves the launchers' rendezvous), PADDLE_NNODES and PADDLE_JOB_ID; it
starts this script with the trainer's rank and endpoints in the environment.
`init_parallel_env` joins the processes (gloo on CPU), each trains on its shard of the
training set, and DataParallel all-reduces the gradients, so every trainer holds the same model
after every update. Run without the launcher it trains in one process.

The data are scikit-learn's bundled handwritten digits (8x8 images, 1797 samples): real, and
available offline. Only trainer 0 prints; the last line is `final validation accuracy: X`.
"""

import argparse
import math
import sys

import numpy as np


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batchsize", type=int, default=32, help="per trainer")
    parser.add_argument("--units", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=0.002, help="Adam's lr")
    parser.add_argument("--validation-fraction", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def load_data(validation_fraction, seed):
    """(train images, train labels, validation images, validation labels); the same split on
    every trainer (a fixed seed)."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    order = np.random.RandomState(seed).permutation(len(digits.target))
    cut = int(len(order) * (1 - validation_fraction))
    train, validation = order[:cut], order[cut:]
    images = (digits.data / 16.0).astype(np.float32)
    labels = digits.target.astype(np.int64)
    return images[train], labels[train], images[validation], labels[validation]


def main(argv):
    args = parse_args(argv)
    import paddle
    import paddle.distributed as dist
    from paddle import nn

    paddle.set_device("cpu")
    distributed = dist.get_world_size() > 1
    if distributed:
        dist.init_parallel_env()
    rank, size = dist.get_rank(), dist.get_world_size()

    def say(message):
        if rank == 0:
            print(message, flush=True)

    train_x, train_y, valid_x, valid_y = load_data(args.validation_fraction, args.seed)
    say(f"training on {size} trainer(s) (PaddlePaddle {paddle.__version__}, collective): "
        f"digits, {len(train_y)} training and {len(valid_y)} validation samples")
    shard_x, shard_y = train_x[rank::size], train_y[rank::size]

    paddle.seed(args.seed)  # the same initial weights everywhere (DataParallel syncs too)
    model = nn.Sequential(
        nn.Linear(train_x.shape[1], args.units), nn.ReLU(),
        nn.Linear(args.units, args.units), nn.ReLU(),
        nn.Linear(args.units, 10),
    )
    if distributed:
        model = paddle.DataParallel(model)
    optimizer = paddle.optimizer.Adam(learning_rate=args.learning_rate,
                                      parameters=model.parameters())
    loss_function = nn.CrossEntropyLoss()
    generator = np.random.RandomState(args.seed + rank)
    # Every update is a collective all-reduce, so every trainer runs the same number of them:
    # the count comes from the global training-set size, not from the local shard.
    updates = max(1, math.ceil(len(train_y) / (args.batchsize * size)))
    accuracy = 0.0
    for epoch in range(1, args.epochs + 1):
        model.train()
        order = generator.permutation(len(shard_y))
        losses = []
        for index in range(updates):
            batch = order[index * args.batchsize:(index + 1) * args.batchsize]
            if len(batch) == 0:  # a shorter shard: reuse its start
                batch = order[:args.batchsize]
            loss = loss_function(model(paddle.to_tensor(shard_x[batch])),
                                 paddle.to_tensor(shard_y[batch]))
            loss.backward()
            optimizer.step()
            optimizer.clear_grad()
            losses.append(float(loss))
            if epoch == 1 and index == 0:
                say(f"first iteration: loss {losses[0]:.4f}")
        model.eval()
        with paddle.no_grad():
            predicted = model(paddle.to_tensor(valid_x)).numpy().argmax(axis=1)
        accuracy = float((predicted == valid_y).mean())
        say(f"epoch {epoch}/{args.epochs}: loss {np.mean(losses):.4f}, "
            f"validation accuracy {accuracy:.4f}")
    say(f"final validation accuracy: {accuracy:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
