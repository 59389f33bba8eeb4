"""TrainJob fields one Trainer release types differently from another: accepted, with a
warning naming the releases that read them so."""

from __future__ import annotations

import pytest

from tests.kinds.trainjob.test_trainjob import trainjob
from trainjobs.kinds.registry import parse_job


@pytest.mark.parametrize("value", ["auto", "cpu", "gpu"])
def test_a_string_num_proc_per_node_warns_that_v2_2_types_it_int32(value):
    job = trainjob(numProcPerNode=value, resourcesPerNode={"requests": {"cpu": "2"}})

    warnings = [str(w) for w in parse_job(job, "tj.yaml").warnings]

    assert warnings == [
        f'spec.trainer.numProcPerNode: "{value}" is read by Kubeflow Trainer v2.0 and v2.1 '
        "(an int or auto, cpu, gpu); from v2.2 the field is an int32 and the API server "
        "refuses a string: give the number of processes per node, e.g. numProcPerNode: 1"
    ]


def test_an_int_num_proc_per_node_warns_of_nothing():
    assert parse_job(trainjob(numProcPerNode=2), "tj.yaml").warnings == ()
