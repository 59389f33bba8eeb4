#!/usr/bin/env python3
"""MNIST-style MLP classifier in Chainer; data-parallel over MPI with ChainerMN.

Without --communicator it trains in one process (the single-pod Chainer example). With
--communicator (e.g. `naive`, the one that works on CPU) every MPI rank trains on its shard
and ChainerMN all-reduces the gradients: start it with `mpiexec -n N`.

With --gpu it trains on GPUs through CuPy (the CUDA images): each rank uses the GPU of its
index among the ranks on its node (ChainerMN's intra_rank), so `mpiexec -n 8` on an 8-GPU pod
uses every GPU once; a single process uses GPU 0. Every communicator except `naive`
all-reduces GPU arrays (`pure_nccl` over NCCL), so those imply --gpu.

The default data are scikit-learn's bundled handwritten digits (8x8 images, 1797 samples):
real, and available offline. `--dataset mnist` uses Chainer's MNIST loader instead, which
downloads on first use (for clusters with internet access or a pre-filled ~/.chainer cache).
Only rank 0 prints; the last line is `final validation accuracy: X`.
"""

import argparse
import math
import sys

import numpy as np

import chainer
import chainer.functions as F
import chainer.links as L


class MLP(chainer.Chain):
    def __init__(self, units, classes):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(None, units)
            self.l2 = L.Linear(units, units)
            self.l3 = L.Linear(units, classes)

    def forward(self, x):
        h = F.relu(self.l1(x))
        h = F.relu(self.l2(h))
        return self.l3(h)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--communicator", default=None,
                        help="ChainerMN communicator (e.g. naive); omit to train in one process")
    parser.add_argument("--gpu", action="store_true",
                        help="train on GPUs with CuPy (implied by communicators other than naive)")
    parser.add_argument("--dataset", choices=["digits", "mnist"], default="digits")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batchsize", type=int, default=32, help="per rank")
    parser.add_argument("--units", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=0.002, help="Adam's alpha")
    parser.add_argument("--validation-fraction", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="write the trained model (npz) here")
    return parser.parse_args(argv)


def device_spec(gpu, comm):
    """Chainer's device for this process: its node-local rank's GPU, or the CPU."""
    if not gpu:
        return "@numpy"
    return f"@cupy:{comm.intra_rank if comm else 0}"


def load_data(name, validation_fraction, seed):
    """(train, validation) as Chainer TupleDatasets of float32 images and int32 labels."""
    if name == "mnist":
        return chainer.datasets.get_mnist()
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = (digits.data / 16.0).astype(np.float32)
    labels = digits.target.astype(np.int32)
    order = np.random.RandomState(seed).permutation(len(labels))
    cut = int(len(labels) * (1 - validation_fraction))
    train, validation = order[:cut], order[cut:]
    return (
        chainer.datasets.TupleDataset(images[train], labels[train]),
        chainer.datasets.TupleDataset(images[validation], labels[validation]),
    )


def main(argv):
    args = parse_args(argv)
    comm = None
    if args.communicator:
        import chainermn

        comm = chainermn.create_communicator(args.communicator)
    rank, size = (comm.rank, comm.size) if comm else (0, 1)
    gpu = args.gpu or args.communicator not in (None, "naive")
    device = None
    if gpu:
        device = chainer.get_device(device_spec(gpu, comm))
        device.use()

    def say(message):
        if rank == 0:
            print(message, flush=True)

    train = validation = None
    if rank == 0:
        train, validation = load_data(args.dataset, args.validation_fraction, args.seed)
        say(f"training on {size} rank(s) "
            f"({args.communicator or 'no'} communicator): {args.dataset}, "
            f"{len(train)} training and {len(validation)} validation samples")
    total = len(train) if rank == 0 else None
    if comm:
        # Rank 0 holds the data; every rank gets an equal shard.
        train = chainermn.scatter_dataset(train, comm, shuffle=True, seed=args.seed)
        validation = chainermn.scatter_dataset(validation, comm)
        total = comm.bcast_obj(total)  # only rank 0 may pass a value

    np.random.seed(args.seed + rank)
    model = L.Classifier(MLP(args.units, 10))
    if device is not None:
        model.to_device(device)  # before the optimizer: ChainerMN broadcasts the parameters
    optimizer = chainer.optimizers.Adam(alpha=args.learning_rate)
    if comm:
        optimizer = chainermn.create_multi_node_optimizer(optimizer, comm)
    optimizer.setup(model)

    batches = chainer.iterators.SerialIterator(train, args.batchsize, shuffle=True)
    # Every rank must run the same number of updates (each one is a collective all-reduce),
    # so the count comes from the global training-set size, not from the local shard.
    updates_per_epoch = max(1, math.ceil(total / (args.batchsize * size)))
    accuracy = 0.0
    for epoch in range(1, args.epochs + 1):
        losses = []
        for update in range(updates_per_epoch):
            images, labels = chainer.dataset.concat_examples(batches.next(), device)
            optimizer.update(model, images, labels)
            losses.append(float(model.loss.array))
            if epoch == 1 and update == 0:
                say(f"first iteration: loss {losses[0]:.4f}")
        accuracy = evaluate(model, validation, comm, device)
        say(f"epoch {epoch}/{args.epochs}: loss {np.mean(losses):.4f}, "
            f"validation accuracy {accuracy:.4f}")
    if args.out and rank == 0:
        model.to_cpu()
        chainer.serializers.save_npz(args.out, model)
        say(f"model written to {args.out}")
    say(f"final validation accuracy: {accuracy:.4f}")
    return 0


def evaluate(model, dataset, comm, device=None):
    """Accuracy over the whole validation set (every rank's shard, summed over MPI)."""
    images, labels = chainer.dataset.concat_examples(dataset, device)
    with chainer.using_config("train", False), chainer.no_backprop_mode():
        predicted = model.predictor(images).array.argmax(axis=1)
    correct, count = int((predicted == labels).sum()), len(labels)
    if comm:
        correct, count = comm.allreduce_obj(correct), comm.allreduce_obj(count)
    return correct / count


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
