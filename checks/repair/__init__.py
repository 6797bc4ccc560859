"""Find the fix: for a failing exercise, the smallest change of the learner's own code that
makes every check pass, verified by the checks before it is said.

    error_model   the candidate changes: learner mistakes as edits of the file's AST, each
                  with the sentence that names the mistake's mechanism
    search        orders the candidates, tries them (the failing checks first, then the whole
                  suite) in warm worker processes with a time limit each, then pairs
    worker        the warm process that runs a workshop's checks on one candidate file
    cli           ``python -m checks.repair WORKSHOP --file PATH``

The learner's file is never written: candidates are copies in a temporary folder.
"""
