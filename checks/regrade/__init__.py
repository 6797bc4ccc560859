"""``python -m checks regrade``: an instructor regrades a whole cohort.

SUBMISSIONS holds one folder per learner with that learner's workshop files named as in
the workspace (``alice/strided_softmax.py``).  Each (learner, workshop) runs the single-run
path, ``python -m checks <workshop> --file F --json OUT --seed N --timeout T``, in a process
of its own with its own temporary workspace, spread over a Dask cluster (one worker per
GPU, or CPU workers running Triton's interpreter, or a running cluster named by
``--scheduler``); the reports are written as the verdicts arrive.

The rooms of this package, each by meaning:

* ``submissions`` -- which files are there, and which name no known workshop;
* ``execution`` -- one submission's run on a worker (limits, captured output, verdict);
* ``verdicts`` -- what a run's records come to (outcome word, failing ids, the fault);
* ``cluster`` -- the Dask cluster and how each task asks for its GPU;
* ``reports`` -- the per-learner JSON files and the cohort's JSON, CSV and Markdown;
* ``cli`` -- the command line and the loop that prints progress as verdicts arrive;
* ``measure`` -- the scale measurement (a synthetic cohort through 1 and 2 workers).

Only ``cluster`` and ``cli`` import Dask, lazily: the rest of the engine runs without it.
"""
