#!/usr/bin/env python3
"""MNIST-style MLP classifier in PyTorch, data-parallel with torch.distributed (DDP).

Every process of a PyTorchJob runs it. `init_process_group(backend)` reads the environment
the PyTorchJob sets (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK): rank 0 is the master. Each
rank trains on its shard of the training set and DistributedDataParallel all-reduces the
gradients, so every rank holds the same model after every update. Without WORLD_SIZE it
trains in one process.

The data are scikit-learn's bundled handwritten digits (8x8 images, 1797 samples): real, and
available offline. Only rank 0 prints; the last line is `final validation accuracy: X`.
"""

import argparse
import math
import os
import sys

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["gloo", "nccl", "mpi"], default="gloo",
                        help="torch.distributed backend (gloo on CPU, nccl on GPUs)")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batchsize", type=int, default=32, help="per rank")
    parser.add_argument("--units", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=0.002, help="Adam's lr")
    parser.add_argument("--validation-fraction", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1,
                        help="CPU threads per rank: the model is tiny, more only contend")
    parser.add_argument("--out", default=None, help="write the trained model (state dict) here")
    return parser.parse_args(argv)


def load_data(validation_fraction, seed):
    """(train images, train labels, validation images, validation labels) as tensors; the
    same split on every rank (a fixed seed)."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = torch.from_numpy((digits.data / 16.0).astype(np.float32))
    labels = torch.from_numpy(digits.target.astype(np.int64))
    order = torch.from_numpy(np.random.RandomState(seed).permutation(len(labels)))
    cut = int(len(labels) * (1 - validation_fraction))
    train, validation = order[:cut], order[cut:]
    return images[train], labels[train], images[validation], labels[validation]


def mlp(inputs, units, classes):
    return nn.Sequential(
        nn.Linear(inputs, units), nn.ReLU(),
        nn.Linear(units, units), nn.ReLU(),
        nn.Linear(units, classes),
    )


def main(argv):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    distributed = "WORLD_SIZE" in os.environ
    if distributed:
        dist.init_process_group(args.backend)
    rank, size = (dist.get_rank(), dist.get_world_size()) if distributed else (0, 1)
    device = torch.device("cuda", torch.cuda.current_device()) if args.backend == "nccl" \
        else torch.device("cpu")

    def say(message):
        if rank == 0:
            print(message, flush=True)

    train_x, train_y, valid_x, valid_y = load_data(args.validation_fraction, args.seed)
    say(f"training on {size} rank(s) ({args.backend} backend): digits, "
        f"{len(train_y)} training and {len(valid_y)} validation samples")
    # Every rank gets an equal shard of the training set and of the validation set.
    shard_x, shard_y = train_x[rank::size].to(device), train_y[rank::size].to(device)
    valid_x, valid_y = valid_x[rank::size].to(device), valid_y[rank::size].to(device)

    torch.manual_seed(args.seed)  # the same initial weights everywhere (DDP broadcasts too)
    model = mlp(train_x.shape[1], args.units, 10).to(device)
    if distributed:
        model = DistributedDataParallel(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.learning_rate)
    loss_function = nn.CrossEntropyLoss()
    generator = torch.Generator().manual_seed(args.seed + rank)
    # Every update is a collective all-reduce, so every rank must run the same number of
    # them: the count comes from the global training-set size, not from the local shard.
    updates_per_epoch = max(1, math.ceil(len(train_y) / (args.batchsize * size)))
    accuracy = 0.0
    for epoch in range(1, args.epochs + 1):
        model.train()
        order = torch.randperm(len(shard_y), generator=generator).to(device)
        losses = []
        for update in range(updates_per_epoch):
            batch = order[update * args.batchsize:(update + 1) * args.batchsize]
            if len(batch) == 0:  # a shorter shard: reuse its start
                batch = order[:args.batchsize]
            optimizer.zero_grad()
            loss = loss_function(model(shard_x[batch]), shard_y[batch])
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            if epoch == 1 and update == 0:
                say(f"first iteration: loss {losses[0]:.4f}")
        accuracy = evaluate(model, valid_x, valid_y, distributed)
        say(f"epoch {epoch}/{args.epochs}: loss {np.mean(losses):.4f}, "
            f"validation accuracy {accuracy:.4f}")
    if args.out and rank == 0:
        module = model.module if distributed else model
        torch.save(module.state_dict(), args.out)
        say(f"model written to {args.out}")
    say(f"final validation accuracy: {accuracy:.4f}")
    if distributed:
        # Leave together: a rank whose peers are gone aborts inside gloo's teardown, and its
        # pod would count as failed (and be retried) although training succeeded.
        dist.barrier()
        dist.destroy_process_group()
    return 0


def evaluate(model, images, labels, distributed):
    """Accuracy over the whole validation set (every rank's shard, summed with all_reduce)."""
    model.eval()
    with torch.no_grad():
        predicted = model(images).argmax(dim=1)
    counts = torch.tensor([int((predicted == labels).sum()), len(labels)], dtype=torch.int64,
                          device=images.device)
    if distributed:
        dist.all_reduce(counts)
    return int(counts[0]) / int(counts[1])


if __name__ == "__main__":
    status = main(sys.argv[1:])
    # Leave without finalizing the interpreter. gloo's worker threads outlive
    # destroy_process_group() and free the last collective's tensors on their own; if one does
    # that while the interpreter finalizes, taking the GIL ends the thread mid-destructor and
    # the C++ runtime aborts the process (exit code 134) although training succeeded.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
