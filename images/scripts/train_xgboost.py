#!/usr/bin/env python3
"""Gradient-boosted trees on the digits with XGBoost, distributed through its collective.

Every pod of an XGBoostJob runs it. The environment the XGBoostJob sets says where each
process stands (training-operator's pkg/controller.v1/xgboost/xgboost.go): RANK (the Master is
0, Worker i is i + 1), WORLD_SIZE (all pods), MASTER_ADDR and MASTER_PORT (the Master's
Service and its xgboostjob-port). Rank 0 starts XGBoost's tracker on MASTER_PORT; every rank,
rank 0 included, joins the collective through it, trains on its shard of the rows, and the
collective all-reduces the gradient histograms, so every rank builds the same trees. Without
WORLD_SIZE it trains in one process.

The data are scikit-learn's bundled handwritten digits (8x8 images, 1797 samples): real, and
available offline. Only rank 0 prints; the last line is `final validation accuracy: X`.
"""

import argparse
import os
import sys

import numpy as np
import xgboost as xgb
from xgboost import collective
from xgboost.tracker import RabitTracker


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40, help="boosting rounds")
    parser.add_argument("--max-depth", type=int, default=4)
    parser.add_argument("--learning-rate", type=float, default=0.3)
    parser.add_argument("--validation-fraction", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="write the trained model (JSON) here")
    return parser.parse_args(argv)


def load_data(validation_fraction, seed):
    """(train images, train labels, validation images, validation labels); the same split on
    every rank (a fixed seed)."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    order = np.random.RandomState(seed).permutation(len(digits.target))
    cut = int(len(order) * (1 - validation_fraction))
    train, validation = order[:cut], order[cut:]
    images = (digits.data / 16.0).astype(np.float32)
    return images[train], digits.target[train], images[validation], digits.target[validation]


def train(args, rank, size):
    def say(message):
        if rank == 0:
            print(message, flush=True)

    train_x, train_y, valid_x, valid_y = load_data(args.validation_fraction, args.seed)
    say(f"training on {size} rank(s) (XGBoost {xgb.__version__} collective): digits, "
        f"{len(train_y)} training and {len(valid_y)} validation samples")
    shard = xgb.DMatrix(train_x[rank::size], label=train_y[rank::size])
    validation = xgb.DMatrix(valid_x, label=valid_y)
    params = {
        "objective": "multi:softprob",
        "num_class": 10,
        "tree_method": "hist",
        "max_depth": args.max_depth,
        "eta": args.learning_rate,
        "eval_metric": "mlogloss",
        "seed": args.seed,
        "nthread": 1,
    }
    history = {}
    booster = xgb.train(params, shard, num_boost_round=args.rounds,
                        evals=[(validation, "validation")], evals_result=history,
                        verbose_eval=False)
    losses = history["validation"]["mlogloss"]
    say(f"first round: validation loss {losses[0]:.4f}")
    say(f"round {args.rounds}: validation loss {losses[-1]:.4f}")
    predicted = booster.predict(validation).argmax(axis=1)
    accuracy = float((predicted == valid_y).mean())
    if args.out and rank == 0:
        booster.save_model(args.out)
        say(f"model written to {args.out}")
    say(f"final validation accuracy: {accuracy:.4f}")


def main(argv):
    args = parse_args(argv)
    if "WORLD_SIZE" not in os.environ:
        train(args, 0, 1)
        return 0
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    port = int(os.environ["MASTER_PORT"])
    tracker = None
    if rank == 0:
        # The tracker listens on every address of the Master's pod, at the port its
        # Service names; sortby="task" gives each process the rank it passes below.
        tracker = RabitTracker(n_workers=size, host_ip="0.0.0.0", port=port, sortby="task")
        tracker.start()
    with collective.CommunicatorContext(dmlc_tracker_uri=os.environ["MASTER_ADDR"],
                                        dmlc_tracker_port=port, dmlc_task_id=str(rank)):
        train(args, rank, size)
    if tracker is not None:
        tracker.wait_for()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
