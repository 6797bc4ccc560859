"""Mutation testing of the checks' teaching: ``python -m checks.mutation``.

    operators.py   the mutation operators over a function's AST (a splice of the source)
    generate.py    every mutant of a GPU workshop's reference answer, stable ids, the sample
    classify.py    survived / rejected and explained or not / crashed / timed out: the rule
    worker.py      ``python -m checks.mutation.worker``: a warm process running the checks
                   in Triton's interpreter on one mutant file after another
    runner.py      two such workers fed mutants, with a time limit per mutant
    report.py      the JSON report and its markdown summary
    cli.py         the command line

A room above the engine: it imports checks.judging (through the worker) and
checks.running; nothing in the engine's rooms, the course or the app imports it
(pyproject.toml's import contracts).
"""
